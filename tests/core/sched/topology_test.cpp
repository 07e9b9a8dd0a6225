// The topology-aware GPU policy fed by a published `hami.io/node-nvidia-score`: the annotation as
// the device plugin writes it (codec::ScoreTopology + EncodePairScores), read back by ReadNode.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/codec/gpu_topology.h"
#include "core/codec/node_inventory.h"
#include "core/codec/pair_scores.h"
#include "core/sched/cluster_objects.h"
#include "core/sched/fit.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;

// A node of 4 GPUs (24000 MiB, 10 slots) whose device plugin published the scores of `topology`.
NodeView PublishedNode(const std::string& topology) {
  const std::vector<std::string> uuids = {"GPU-0", "GPU-1", "GPU-2", "GPU-3"};
  codec::NodeInventory inv;
  for (int i = 0; i < 4; ++i) {
    inv.push_back({uuids[static_cast<size_t>(i)], i, 10, 24000, 100, "NVIDIA H100 80GB HBM3", 0,
                   "hami-core", true});
  }
  Result<codec::GpuTopology> t = codec::ParseTopologySpec(topology, uuids);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  const json node = {
      {"metadata",
       {{"name", "n1"},
        {"annotations",
         {{"hami.io/node-nvidia-register",
           codec::EncodeInventory(inv, codec::InventoryFormat::kJson)},
          {"hami.io/node-nvidia-score", codec::EncodePairScores(codec::ScoreTopology(*t))}}}}}};
  NodeState s = ReadNode(node);
  EXPECT_TRUE(s.inventory_error.empty()) << s.inventory_error;
  s.view.usage.resize(s.view.gpus.size());
  return s.view;
}

std::vector<std::string> Placed(const NodeView& node, GpuPolicy policy, int count) {
  PodRequest pod;
  pod.app_containers = {{count, 1000, -1, 10}};
  pod.gpu_policy = policy;
  NodeFit fit = FitPod(node, pod);
  EXPECT_TRUE(fit.ok) << fit.message;
  if (!fit.ok) return {};
  std::vector<std::string> out;
  for (const auto& d : fit.allocation.containers[0]) out.push_back(d.uuid);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TopologyAware, PicksTheNvLinkedPairOfAPublishedScore) {
  // NVLinked pairs 0-2 and 1-3, so index order alone (0, 1) would be wrong.
  const NodeView node = PublishedNode("0-2=node+nv4,1-3=node+nv4,*=system");
  ASSERT_EQ(node.pair_scores.at("GPU-0").at("GPU-2"), 420);
  ASSERT_EQ(node.pair_scores.at("GPU-0").at("GPU-1"), 10);
  const auto pair = Placed(node, GpuPolicy::kTopologyAware, 2);
  EXPECT_TRUE(pair == (std::vector<std::string>{"GPU-0", "GPU-2"}) ||
              pair == (std::vector<std::string>{"GPU-1", "GPU-3"}))
      << pair[0] << "," << pair[1];
  EXPECT_NE(Placed(node, GpuPolicy::kSpread, 2), pair);  // without the policy: another pair
}

TEST(TopologyAware, TheBetterLinkedPairWins) {
  // 0-1 two NVLinks, 2-3 eight: the 2-3 pair.
  const NodeView node = PublishedNode("0-1=node+nv2,2-3=node+nv8,*=system");
  EXPECT_EQ(Placed(node, GpuPolicy::kTopologyAware, 2),
            (std::vector<std::string>{"GPU-2", "GPU-3"}));
}

TEST(TopologyAware, DefaultFakeTopologyPicksAnEvenOddPair) {
  const NodeView node = PublishedNode("default");
  const auto pair = Placed(node, GpuPolicy::kTopologyAware, 2);
  EXPECT_TRUE(pair == (std::vector<std::string>{"GPU-0", "GPU-1"}) ||
              pair == (std::vector<std::string>{"GPU-2", "GPU-3"}));
}

TEST(TopologyAware, OneGpuTakesTheOrphanOfABrokenPairSoTheOtherPairStaysWhole) {
  // Pairs 0-1 and 2-3. GPU-0 is held whole, GPU-1 has a small vGPU (so spread ranks it last).
  NodeView node = PublishedNode("default");
  node.usage[0] = {1, 1000, 100};
  node.usage[1] = {1, 1000, 10};
  EXPECT_EQ(Placed(node, GpuPolicy::kTopologyAware, 1), std::vector<std::string>{"GPU-1"});
  EXPECT_EQ(Placed(node, GpuPolicy::kSpread, 1), std::vector<std::string>{"GPU-2"});
  // The NVLinked pair 2-3 is still there for a 2-GPU pod.
  node.usage[1] += {1, 1000, 10};
  EXPECT_EQ(Placed(node, GpuPolicy::kTopologyAware, 2),
            (std::vector<std::string>{"GPU-2", "GPU-3"}));
}

}  // namespace
}  // namespace vgpu::sched
