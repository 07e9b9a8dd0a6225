#include "sim/cluster/topology_stats.h"

#include <gtest/gtest.h>

#include "core/codec/gpu_topology.h"

namespace vgpu::sim {
namespace {

using nlohmann::json;

json NodeWithScores(const std::string& name, const std::optional<std::string>& scores) {
  json node = {{"metadata", {{"name", name}, {"annotations", json::object()}}}};
  if (scores) node["metadata"]["annotations"]["hami.io/node-nvidia-score"] = *scores;
  return node;
}

std::vector<AllocatedVgpu> On(std::vector<std::string> uuids) {
  std::vector<AllocatedVgpu> out;
  out.reserve(uuids.size());
  for (std::string& u : uuids) out.push_back({std::move(u), 1000, 10});
  return out;
}

// The annotation a device plugin publishes for 4 GPUs g0..g3 with NVLinked pairs 0-1 and 2-3.
std::string PairsAnnotation() {
  Result<codec::GpuTopology> t = codec::ParseTopologySpec("default", {"g0", "g1", "g2", "g3"});
  EXPECT_TRUE(t.ok());
  return codec::EncodePairScores(codec::ScoreTopology(*t));
}

TEST(TopologyStats, NodesWithoutReadableScoresAreLeftOut) {
  const NodePairScores s = PairScoresOfNodes(
      {NodeWithScores("scored", PairsAnnotation()), NodeWithScores("bare", std::nullopt),
       NodeWithScores("garbage", "{not json"), NodeWithScores("not-a-list", "{\"uuid\":1}")});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.at("scored").at("g0").at("g1"), 420);
  EXPECT_EQ(s.at("scored").at("g1").at("g2"), 10);
}

TEST(TopologyStats, CountsMultiGpuPodsOnScoredNodes) {
  NodePairScores scores = PairScoresOfNodes({NodeWithScores("n", PairsAnnotation())});
  // One direction only: the other is looked up, as the scheduler does.
  scores["half"]["a"]["b"] = 200;
  struct Case {
    const char* name;
    std::string node;
    std::vector<std::string> gpus;
    int multi, nvlinked;
    double mean;
  };
  const Case cases[] = {
      {"NVLinked pair", "n", {"g0", "g1"}, 1, 1, 420},
      {"order does not matter", "n", {"g3", "g2"}, 1, 1, 420},
      {"across pairs", "n", {"g1", "g2"}, 1, 0, 10},
      {"two pairs: 2 of 6 pairs NVLinked", "n", {"g0", "g1", "g2", "g3"}, 1, 0, 880.0 / 6},
      {"one GPU", "n", {"g0"}, 0, 0, 0},
      {"two vGPUs on one GPU count once", "n", {"g0", "g0"}, 0, 0, 0},
      {"node without scores", "other", {"g0", "g1"}, 0, 0, 0},
      {"GPU missing from the scores scores 0", "n", {"g0", "gX"}, 1, 0, 0},
      {"reverse direction", "half", {"b", "a"}, 1, 1, 200},
  };
  for (const Case& c : cases) {
    TopologyStats st;
    CountPlacement(scores, c.node, On(c.gpus), st);
    EXPECT_EQ(st.multi_gpu_pods, c.multi) << c.name;
    EXPECT_EQ(st.all_nvlinked, c.nvlinked) << c.name;
    EXPECT_DOUBLE_EQ(st.mean_pair_score(), c.mean) << c.name;
  }
  // Pods add up; the mean is per pod.
  TopologyStats st;
  CountPlacement(scores, "n", On({"g0", "g1"}), st);
  CountPlacement(scores, "n", On({"g1", "g2"}), st);
  CountPlacement(scores, "n", On({"g2"}), st);
  EXPECT_EQ(st.multi_gpu_pods, 2);
  EXPECT_EQ(st.all_nvlinked, 1);
  EXPECT_DOUBLE_EQ(st.mean_pair_score(), 215);
}

}  // namespace
}  // namespace vgpu::sim
