#include "deviceplugin/devices.h"

#include <gtest/gtest.h>

#include "core/codec/node_inventory.h"

namespace vgpu::deviceplugin {
namespace {

std::vector<GpuDevice> TwoGpus() {
  return {{"GPU-a", 0, "NVIDIA H100 80GB HBM3", 81559, 0},
          {"GPU-b", 1, "NVIDIA H100 80GB HBM3", 81559, 1}};
}

TEST(BuildReplicas, SplitCountReplicasPerGpuWithHealthAndNuma) {
  auto r = BuildReplicas(TwoGpus(), 3, {"GPU-b"});
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0].id, "GPU-a-0");
  EXPECT_EQ(r[2].id, "GPU-a-2");
  EXPECT_EQ(r[3].id, "GPU-b-0");
  EXPECT_TRUE(r[0].healthy);
  EXPECT_FALSE(r[5].healthy);
  EXPECT_EQ(r[5].numa, 1);
}

TEST(BuildInventory, ScalesMemoryAndCoresAndRoundTripsBothFormats) {
  SplitConfig split{10, 1.5, 2.0, "hami-core"};
  auto inv = BuildInventory(TwoGpus(), split, {"GPU-a"});
  ASSERT_EQ(inv.size(), 2u);
  EXPECT_EQ(inv[0].devmem, 122339);  // 81559 * 1.5 rounded
  EXPECT_EQ(inv[0].devcore, 200);
  EXPECT_EQ(inv[0].count, 10);
  EXPECT_EQ(inv[0].type, "NVIDIA H100 80GB HBM3");  // no second NVIDIA- (HAMi)
  EXPECT_FALSE(inv[0].health);
  EXPECT_TRUE(inv[1].health);
  EXPECT_EQ(inv[1].index, 1);
  EXPECT_EQ(inv[1].numa, 1);
  EXPECT_EQ(inv[0].mode, "hami-core");
  for (auto format : {codec::InventoryFormat::kJson, codec::InventoryFormat::kLegacyText}) {
    const std::string text = codec::EncodeInventory(inv, format);
    EXPECT_EQ(text.front() == '[', format == codec::InventoryFormat::kJson) << text;
    auto back = codec::DecodeInventory(text);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, inv) << text;
  }
}

// A node in MPS mode registers every GPU with mode "mps", in both inventory forms (the legacy
// text form carries the mode in its ninth field), so the scheduler can keep MPS pods apart.
TEST(BuildInventory, MpsNodeRegistersEveryGpuAsMps) {
  SplitConfig split{4, 1.0, 1.0, "mps"};
  auto inv = BuildInventory(TwoGpus(), split, {});
  ASSERT_EQ(inv.size(), 2u);
  for (const auto& d : inv) EXPECT_EQ(d.mode, "mps") << d.id;
  for (auto format : {codec::InventoryFormat::kJson, codec::InventoryFormat::kLegacyText}) {
    auto back = codec::DecodeInventory(codec::EncodeInventory(inv, format));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ((*back)[1].mode, "mps");
  }
}

// The annotation covers the GPUs the node registers, in their order; a pair whose directions
// disagree scores 0 and is reported by UUID.
TEST(EncodeNodePairScores, RegisteredGpusInOrderAndAsymmetricPairsByUuid) {
  Result<codec::GpuTopology> t =
      codec::ParseTopologySpec("0-1=node+nv4,*=system", {"GPU-a", "GPU-b", "GPU-c"});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  t->gpus[2].nvlink_remote_bus_ids.push_back(t->gpus[0].bus_id);  // c sees a link to a; a not
  const GpuDevice a{"GPU-a", 0, "m", 1, 0};
  const GpuDevice b{"GPU-b", 1, "m", 1, 0};
  const GpuDevice c{"GPU-c", 2, "m", 1, 0};
  std::vector<std::pair<std::string, std::string>> odd;
  EXPECT_EQ(EncodeNodePairScores(*t, {b, a}, &odd),
            R"([{"uuid":"GPU-b","score":{"GPU-a":420}},{"uuid":"GPU-a","score":{"GPU-b":420}}])");
  EXPECT_TRUE(odd.empty());
  EXPECT_EQ(EncodeNodePairScores(*t, {c, a}, &odd),
            R"([{"uuid":"GPU-c","score":{"GPU-a":0}},{"uuid":"GPU-a","score":{"GPU-c":0}}])");
  EXPECT_EQ(odd, (std::vector<std::pair<std::string, std::string>>{{"GPU-c", "GPU-a"}}));
}

TEST(GpuOfReplica, Table) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"GPU-a-0", "GPU-a"}, {"GPU-0fc3-1b2c-17", "GPU-0fc3-1b2c"},
      {"GPU-a", "GPU-a"},  // trailing part not numeric: not a replica suffix
      {"GPU-a-", "GPU-a-"}, {"plain", "plain"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(GpuOfReplica(in), want) << in;
}

TEST(FilterGpus, DropsByUuidOrIndex) {
  auto gpus = TwoGpus();
  EXPECT_EQ(FilterGpus(gpus, {}, {}).size(), 2u);
  EXPECT_EQ(FilterGpus(gpus, {"GPU-a"}, {}).at(0).uuid, "GPU-b");
  EXPECT_EQ(FilterGpus(gpus, {}, {1}).at(0).uuid, "GPU-a");
  EXPECT_TRUE(FilterGpus(gpus, {"GPU-a"}, {1}).empty());
}

TEST(PreferReplicas, Table) {
  struct Case {
    const char* name;
    std::vector<std::string> available, must;
    size_t size;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"distinct gpus first", {"A-0", "A-1", "B-0", "B-1"}, {}, 2, {"A-0", "B-0"}},
      {"gpu with most free first", {"A-0", "B-0", "B-1"}, {}, 1, {"B-0"}},
      {"must include kept and other gpu added", {"A-0", "A-1", "B-0"}, {"A-0"}, 2, {"A-0", "B-0"}},
      {"fills from same gpu when gpus run out", {"A-0", "A-1"}, {}, 2, {"A-0", "A-1"}},
      {"size zero", {"A-0"}, {}, 0, {}},
  };
  for (const auto& c : cases)
    EXPECT_EQ(PreferReplicas(c.available, c.must, c.size), c.want) << c.name;
}

}  // namespace
}  // namespace vgpu::deviceplugin
