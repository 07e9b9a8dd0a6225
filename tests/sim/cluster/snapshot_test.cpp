#include "sim/cluster/snapshot.h"

#include <gtest/gtest.h>

namespace vgpu::sim {
namespace {

using nlohmann::json;

json Node(const std::string& name, const std::string& inventory) {
  json n = {{"metadata", {{"name", name}}}};
  if (!inventory.empty()) n["metadata"]["annotations"]["hami.io/node-nvidia-register"] = inventory;
  return n;
}

json Pod(const std::string& name, const std::string& node, const std::string& allocated,
         json limits, const std::string& phase = "Running") {
  json p = {{"metadata", {{"name", name}, {"namespace", "default"}}},
            {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"limits", limits}}}}}}}},
            {"status", {{"phase", phase}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  if (!allocated.empty())
    p["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"] = allocated;
  return p;
}

const char* kInventoryJson =
    R"([{"id":"GPU-a","index":0,"count":10,"devmem":40960,"devcore":100,)"
    R"("type":"NVIDIA-NVIDIA A100","numa":0,"mode":"hami-core","health":true}])";

TEST(Snapshot, ReadsInventoriesRequestsAndPlacements) {
  const std::vector<json> nodes = {
      Node("n1", kInventoryJson),
      Node("n2", "GPU-b,10,15360,100,NVIDIA-Tesla T4,0,true:"),  // legacy text form
      Node("n3", "")};
  const std::vector<json> pods = {
      Pod("placed", "n1", "GPU-a,NVIDIA,3000,30:;",
          {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", 3000}, {"nvidia.com/gpucores", 30}}),
      Pod("pending", "", "", {{"nvidia.com/gpu", "2"}}, "Pending"),
      Pod("done", "n1", "GPU-a,NVIDIA,3000,30:;", {{"nvidia.com/gpu", 1}}, "Succeeded"),
      Pod("cpu-only", "n1", "", {{"cpu", "1"}})};
  Result<ClusterSnapshot> s = SnapshotFromObjects(nodes, pods);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->nodes.size(), 3u);
  ASSERT_EQ(s->nodes[0].gpus.size(), 1u);
  EXPECT_EQ(s->nodes[0].gpus[0].mem_mib, 40960);
  EXPECT_EQ(s->nodes[0].gpus[0].slots, 10);
  EXPECT_TRUE(s->nodes[0].gpus[0].healthy);
  EXPECT_EQ(s->nodes[1].gpus[0].uuid, "GPU-b");
  EXPECT_TRUE(s->nodes[2].gpus.empty());
  ASSERT_EQ(s->pods.size(), 2u);  // the finished and the CPU-only pods are not checked
  EXPECT_EQ(s->pods[0].node, "n1");
  EXPECT_EQ(s->pods[0].request, (VgpuRequest{1, 3000, 0, 30}));
  ASSERT_EQ(s->pods[0].allocated.size(), 1u);
  EXPECT_EQ(s->pods[0].allocated[0].cores, 30);
  EXPECT_EQ(s->pods[1].request, (VgpuRequest{2, 0, 100, 100}));
  // The pending pod needs two whole cards; no node has two GPUs, so nothing is violated.
  EXPECT_TRUE(CheckInvariants(*s).ok()) << testing::PrintToString(CheckInvariants(*s).violations);
}

TEST(Snapshot, ReadsTheNodesDeviceCordon) {
  json n = Node("n1", kInventoryJson);
  n["metadata"]["annotations"]["hami.io/device-cordon"] = "GPU-x, GPU-a";
  Result<ClusterSnapshot> s = SnapshotFromObjects({n, Node("n2", kInventoryJson)}, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->nodes[0].gpus[0].cordoned);
  EXPECT_FALSE(s->nodes[1].gpus[0].cordoned);  // the same UUID, but another node's annotation
}

TEST(Snapshot, GarbageAnnotationsAreErrorsNamingTheObject) {
  Result<ClusterSnapshot> s = SnapshotFromObjects({Node("bad-node", "[{oops")}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("bad-node"), std::string::npos) << s.status().message();
  s = SnapshotFromObjects(
      {Node("n1", kInventoryJson)},
      {Pod("bad-pod", "n1", "GPU-a,NVIDIA,lots,30:;", {{"nvidia.com/gpu", 1}})});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("bad-pod"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace vgpu::sim
