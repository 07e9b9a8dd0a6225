#include "core/codec/gpu_topology.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

// A topology of `n` GPUs named gpu<i> with bus ids 00000000:<10+i>:00.0, every PCIe level
// `level`, and nv[i][j] direct NVLinks from i to j.
GpuTopology Make(size_t n, int level, const std::vector<std::vector<int>>& nv) {
  GpuTopology t;
  t.pcie_level.assign(n, std::vector<int>(n, level));
  for (size_t i = 0; i < n; ++i) {
    t.gpus.push_back(
        {"gpu" + std::to_string(i), "00000000:" + std::to_string(10 + i) + ":00.0", {}, 0});
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      for (int l = 0; i != j && l < nv[i][j]; ++l) {
        t.gpus[i].nvlink_remote_bus_ids.push_back("00000000:" + std::to_string(10 + j) + ":00.0");
      }
    }
  }
  return t;
}

TEST(NormalizeBusId, AsHamiWritesIt) {
  EXPECT_EQ(NormalizeBusId("00000000:19:00.0"), "0000:19:00.0");
  EXPECT_EQ(NormalizeBusId("0000:3B:00.0"), ":3b:00.0");  // HAMi trims any leading 0000
  EXPECT_EQ(NormalizeBusId("0000"), "0000");
  EXPECT_EQ(NormalizeBusId(std::string("00000001:AB:00.0\0junk", 21)), "0001:ab:00.0");
}

// HAMi's Test_calculateGPUScore matrix (NVLink only, no PCIe entries):
//        gpu0 gpu1 gpu2 gpu3
//  gpu0   -   NV1  NV1  NV2
//  gpu1  NV1   -   NV2  NV1
//  gpu2  NV1  NV2   -   NV2
//  gpu3  NV2  NV1  NV2   -
TEST(ScoreTopology, HamisNvLinkMatrix) {
  GpuTopology t =
      Make(4, kTopologyUnknown, {{0, 1, 1, 2}, {1, 0, 2, 1}, {1, 2, 0, 2}, {2, 1, 2, 0}});
  std::vector<std::pair<size_t, size_t>> odd;
  DevicePairScores got = ScoreTopology(t, &odd);
  DevicePairScores want = {{"gpu0", {{"gpu1", 100}, {"gpu2", 100}, {"gpu3", 200}}},
                           {"gpu1", {{"gpu0", 100}, {"gpu2", 200}, {"gpu3", 100}}},
                           {"gpu2", {{"gpu0", 100}, {"gpu1", 200}, {"gpu3", 200}}},
                           {"gpu3", {{"gpu0", 200}, {"gpu1", 100}, {"gpu2", 200}}}};
  EXPECT_EQ(got, want);
  EXPECT_TRUE(odd.empty());
}

struct PairCase {
  const char* name;
  int level_ij, level_ji;
  int nv_ij, nv_ji;
  int64_t want_ij, want_ji;
  bool asymmetric;
};

TEST(PairScore, PciePathsNvLinksAndAsymmetry) {
  const PairCase cases[] = {
      {"internal", kTopologyInternal, kTopologyInternal, 0, 0, 60, 60, false},
      {"single switch", kTopologySingle, kTopologySingle, 0, 0, 50, 50, false},
      {"multiple switches", kTopologyMultiple, kTopologyMultiple, 0, 0, 40, 40, false},
      {"host bridge", kTopologyHostBridge, kTopologyHostBridge, 0, 0, 30, 30, false},
      {"numa node", kTopologyNode, kTopologyNode, 0, 0, 20, 20, false},
      {"system", kTopologySystem, kTopologySystem, 0, 0, 10, 10, false},
      {"node + 4 nvlinks", kTopologyNode, kTopologyNode, 4, 4, 420, 420, false},
      {"system + 18 nvlinks", kTopologySystem, kTopologySystem, 18, 18, 1810, 1810, false},
      {"unknown level, nothing else", kTopologyUnknown, kTopologyUnknown, 0, 0, 0, 0, false},
      {"unknown level value 7", 7, 7, 2, 2, 200, 200, false},
      // HAMi's Test_calculateGPUPairScore_asymmetric: NVLink seen from one side only.
      {"nvlink one way", kTopologyNode, kTopologyNode, 4, 0, 0, 0, true},
      {"pcie one way", kTopologyNode, kTopologyUnknown, 0, 0, 0, 0, true},
      // Only the number of link entries must agree: 4 links one way, 2 the other.
      {"link counts differ", kTopologyNode, kTopologyNode, 4, 2, 420, 220, false},
  };
  for (const auto& c : cases) {
    GpuTopology t = Make(2, kTopologySystem, {{0, c.nv_ij}, {c.nv_ji, 0}});
    t.pcie_level[0][1] = c.level_ij;
    t.pcie_level[1][0] = c.level_ji;
    bool odd = false;
    EXPECT_EQ(PairScore(t, 0, 1, &odd), c.want_ij) << c.name;
    EXPECT_EQ(odd, c.asymmetric) << c.name;
    EXPECT_EQ(PairScore(t, 1, 0, &odd), c.want_ji) << c.name;
    EXPECT_EQ(odd, c.asymmetric) << c.name;
  }
}

TEST(NvLinksBetween, DirectThenThroughSwitches) {
  TopologyGpu a{"a", "00000000:18:00.0", {}, 0};
  TopologyGpu b{"b", "00000000:19:00.0", {}, 0};
  EXPECT_EQ(NvLinksBetween(a, b), 0);  // no NVLink at all
  a.nvlink_remote_bus_ids = {"00000000:19:00.0", "00000000:19:00.0", "00000000:20:00.0"};
  EXPECT_EQ(NvLinksBetween(a, b), 2);
  a.nvlink_remote_bus_ids = {"00000000:19:00.0", "0000:19:00.0"};
  EXPECT_EQ(NvLinksBetween(a, b), 1);  // HAMi's normalisation: a 4-digit domain does not match
  // NVSwitch: the remote ends are switches; both GPUs reach them: the smaller count.
  a.nvlink_remote_bus_ids = {"00000000:80:00.0", "00000000:80:00.0", "00000000:81:00.0"};
  a.nvswitch_links = 3;
  b.nvswitch_links = 2;
  EXPECT_EQ(NvLinksBetween(a, b), 2);
  b.nvswitch_links = 0;
  EXPECT_EQ(NvLinksBetween(a, b), 0);
  a.nvlink_remote_bus_ids.clear();  // no enabled links: switches are not looked at
  b.nvswitch_links = 2;
  EXPECT_EQ(NvLinksBetween(a, b), 0);
}

TEST(ParseTopologySpec, DefaultLinksEvenOddPairs) {
  Result<GpuTopology> t = ParseTopologySpec("default", {"g0", "g1", "g2", "g3", "g4"});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  DevicePairScores s = ScoreTopology(*t);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].scores.at("g1"), 420);
  EXPECT_EQ(s[2].scores.at("g3"), 420);
  EXPECT_EQ(s[0].scores.at("g2"), 10);
  EXPECT_EQ(s[1].scores.at("g2"), 10);
  EXPECT_EQ(s[4].scores.at("g3"), 10);               // the odd one out
  EXPECT_EQ(t->gpus[1].bus_id, "00000000:19:00.0");  // the fake driver's bus ids
}

struct SpecCase {
  const char* spec;
  bool ok;
  int64_t s01, s02, s12;
};

TEST(ParseTopologySpec, Table) {
  const SpecCase cases[] = {
      {"", true, 10, 10, 10},
      {"*=node", true, 20, 20, 20},
      {"0-1=nv2", true, 210, 10, 10},  // level from '*' (system)
      {"1-0=single+nv1,*=hostbridge", true, 150, 30, 30},
      {"0-2=nv6+internal, 1-2=multiple", true, 10, 660, 40},
      {"*=nv6", true, 610, 610, 610},  // 12 links per GPU: allowed
      {"*=nv10", false, 0, 0, 0},      // 20 links per GPU
      {"0-1=nv19", false, 0, 0, 0},
      {"0-1=nv0", false, 0, 0, 0},
      {"0-1", false, 0, 0, 0},
      {"0-0=node", false, 0, 0, 0},
      {"0-3=node", false, 0, 0, 0},
      {"0-1=node,1-0=system", false, 0, 0, 0},
      {"0-1=node+system", false, 0, 0, 0},
      {"0-1=nv1+nv2", false, 0, 0, 0},
      {"0-1=pcie", false, 0, 0, 0},
      {"*=node,*=system", false, 0, 0, 0},
      {"a-b=node", false, 0, 0, 0},
  };
  for (const auto& c : cases) {
    Result<GpuTopology> t = ParseTopologySpec(c.spec, {"g0", "g1", "g2"});
    ASSERT_EQ(t.ok(), c.ok) << c.spec << ": " << (t.ok() ? "" : t.status().ToString());
    if (!c.ok) continue;
    DevicePairScores s = ScoreTopology(*t);
    EXPECT_EQ(s[0].scores.at("g1"), c.s01) << c.spec;
    EXPECT_EQ(s[0].scores.at("g2"), c.s02) << c.spec;
    EXPECT_EQ(s[1].scores.at("g2"), c.s12) << c.spec;
    EXPECT_EQ(s[1].scores.at("g0"), c.s01) << c.spec;
  }
}

}  // namespace
}  // namespace vgpu::codec
