#include <gtest/gtest.h>

#include "scheduler/cluster_model.h"
#include "test_objects.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;
using testing::GpuNode;
using testing::GpuPod;

json Placed(const std::string& name, const std::string& node, const std::string& devices,
            const std::string& phase = "Running") {
  json p = GpuPod(name, json::object());
  p["spec"]["nodeName"] = node;
  p["metadata"]["annotations"] = {{"hami.io/vgpu-devices-allocated", devices}};
  p["status"]["phase"] = phase;
  return p;
}

TEST(ClusterModel, UsageRebuiltFromLivePods) {
  ClusterModel m;
  // Pods may arrive before their node (watch order is not guaranteed).
  m.UpsertPod(Placed("a", "n1", "GPU-n1-0,NVIDIA,1000,10:;"));
  m.UpsertNode(GpuNode("n1", 2));
  m.UpsertPod(Placed("b", "n1", "GPU-n1-0,NVIDIA,2000,20:GPU-n1-1,NVIDIA,2000,20:;"));
  m.UpsertPod(Placed("done", "n1", "GPU-n1-1,NVIDIA,5000,50:;", "Succeeded"));
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{2, 3000, 30}));
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-1"), (sched::DeviceUsage{1, 2000, 20}));
  bool seen = false;
  m.ReadNode("n1", [&](const sched::NodeState& s) {
    seen = true;
    ASSERT_EQ(s.view.usage.size(), 2u);
    EXPECT_EQ(s.view.usage[0], (sched::DeviceUsage{2, 3000, 30}));
  });
  EXPECT_TRUE(seen);

  // An update replaces, never adds; a deletion frees.
  m.UpsertPod(Placed("a", "n1", "GPU-n1-0,NVIDIA,1000,10:;"));
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{2, 3000, 30}));
  m.RemovePod(Placed("a", "n1", ""));
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{1, 2000, 20}));
  json terminating = Placed("b", "n1", "GPU-n1-0,NVIDIA,2000,20:GPU-n1-1,NVIDIA,2000,20:;");
  terminating["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  m.UpsertPod(terminating);  // its containers may still run: the GPUs stay counted
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{1, 2000, 20}));
  m.RemovePod(terminating);
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0"), sched::DeviceUsage{});
}

TEST(ClusterModel, InitContainersCountAsPeakAgainstAppSum) {
  ClusterModel m;
  m.UpsertNode(GpuNode("n1", 1));
  json p = Placed("p", "n1",
                  "GPU-n1-0,NVIDIA,9000,0:;GPU-n1-0,NVIDIA,2000,10:;GPU-n1-0,NVIDIA,3000,10:;");
  p["spec"]["initContainers"] = {{{"name", "init"}}};
  p["spec"]["containers"] = {{{"name", "a"}}, {{"name", "b"}}};
  m.UpsertPod(p);
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{2, 9000, 20}));
}

TEST(ClusterModel, GarbageOnPodsAndNodesIsHarmless) {
  ClusterModel m;
  m.UpsertNode(json("not a node"));
  m.UpsertNode(json{{"metadata", {{"name", 5}}}});
  m.UpsertPod(json::array());
  m.UpsertPod(Placed("p", "n1", "GPU-x,NVIDIA,notanumber,1:;"));
  m.UpsertQuota(json{{"metadata", {{"name", "q"}, {"namespace", "ns"}}},
                     {"spec", {{"hard", {{"limits.nvidia.com/gpumem", "x"}}}}}});
  EXPECT_EQ(m.node_count(), 0u);
  EXPECT_EQ(m.UsageOf("n1", "GPU-x"), sched::DeviceUsage{});
  EXPECT_FALSE(m.Quota("ns").has_value());
}

TEST(ClusterModel, RelistKeepsReservationsAndDropsVanishedPods) {
  ClusterModel m;
  m.ReplaceNodes(json::array({GpuNode("n1", 1)}));
  m.UpsertPod(Placed("old", "n1", "GPU-n1-0,NVIDIA,1000,0:;"));
  auto res = m.Reserve("uid-r", "default", "r", "n1", [](const sched::NodeState& s) {
    sched::PodRequest req;
    req.app_containers = {{1, 500, -1, 0}};
    return sched::FitPod(s.view, req);
  });
  ASSERT_TRUE(res.ok);
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0").mem_mib, 1500);
  m.ReplacePods(json::array());  // "old" is gone after a 410 relist
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0"), (sched::DeviceUsage{1, 500, 0}));
  EXPECT_EQ(m.reservation_count(), 1u);
  m.Unreserve("uid-r");
  EXPECT_EQ(m.UsageOf("n1", "GPU-n1-0"), sched::DeviceUsage{});
}

TEST(ClusterModel, TightestQuotaWins) {
  ClusterModel m;
  m.UpsertQuota(json::parse(
      R"({"metadata":{"name":"a","namespace":"ns"},"spec":{"hard":{"limits.nvidia.com/gpumem":"9000","limits.nvidia.com/gpucores":"300"}}})"));
  m.UpsertQuota(json::parse(
      R"({"metadata":{"name":"b","namespace":"ns"},"spec":{"hard":{"limits.nvidia.com/gpumem":"5000"}}})"));
  m.UpsertNode(GpuNode("n1", 1));
  json p = Placed("p", "n1", "GPU-n1-0,NVIDIA,1000,10:;");
  p["metadata"]["namespace"] = "ns";
  m.UpsertPod(p);
  auto q = m.Quota("ns");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->limit.mem_mib, 5000);
  EXPECT_EQ(q->limit.cores, 300);
  EXPECT_EQ(q->used, (sched::QuotaAmount{1000, 10}));
  m.RemoveQuota(json::parse(R"({"metadata":{"name":"b","namespace":"ns"}})"));
  EXPECT_EQ(m.Quota("ns")->limit.mem_mib, 9000);
}

}  // namespace
}  // namespace vgpu::scheduler
