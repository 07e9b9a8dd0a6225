// HAMi's GPU policy words beyond binpack/spread: mutex, the numa ranking key and comma-separated
// combinations (hami.io/gpu-scheduler-policy), as FitPod applies them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/sched/fit.h"
#include "core/sched/policy.h"

namespace vgpu::sched {
namespace {

GpuDevice Gpu(const std::string& uuid, int numa) {
  GpuDevice g;
  g.uuid = uuid;
  g.slots = 10;
  g.mem_mib = 16384;
  g.cores = 100;
  g.type = "NVIDIA-NVIDIA A100-PCIE-40GB";
  g.numa = numa;
  return g;
}

NodeView Node(std::vector<GpuDevice> gpus, std::vector<DeviceUsage> usage) {
  NodeView n;
  n.name = "n1";
  n.gpus = std::move(gpus);
  usage.resize(n.gpus.size());
  n.usage = std::move(usage);
  return n;
}

GpuPolicy Parsed(const char* text) {
  Result<GpuPolicy> p = ParseGpuPolicy(text);
  EXPECT_TRUE(p.ok()) << text << ": " << p.status().ToString();
  return p.ok() ? *p : GpuPolicy{};
}

PodRequest Ask(std::vector<ContainerRequest> app, const char* policy) {
  PodRequest r;
  r.app_containers = std::move(app);
  r.gpu_policy = Parsed(policy);
  return r;
}

std::vector<std::string> Uuids(const std::vector<AllocatedDevice>& devs) {
  std::vector<std::string> out;
  for (const auto& d : devs) out.push_back(d.uuid);
  return out;
}

constexpr DeviceUsage kHalf{1, 8192, 50};

TEST(GpuPolicy, MutexTakesOnlyIdleGpus) {
  // GPU-a holds one vGPU, GPU-b and GPU-c are idle.
  const NodeView node = Node({Gpu("GPU-a", 0), Gpu("GPU-b", 0), Gpu("GPU-c", 1)}, {{1, 100, 0}});
  struct Case {
    const char* name;
    const char* policy;
    int count;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"binpack alone shares the used GPU", "binpack", 1, {"GPU-a"}},
      {"mutex alone: an idle GPU", "mutex", 1, {"GPU-b"}},
      {"binpack,mutex: the fullest idle GPU, not the used one", "binpack,mutex", 1, {"GPU-b"}},
      {"mutex,numa order does not matter for the rule", "numa,mutex", 2, {"GPU-b", "GPU-c"}},
  };
  for (const Case& c : cases) {
    NodeFit fit = FitPod(node, Ask({{c.count, 1000, -1, 0}}, c.policy));
    ASSERT_TRUE(fit.ok) << c.name << ": " << fit.message;
    EXPECT_EQ(Uuids(fit.allocation.containers[0]), c.want) << c.name;
  }
}

TEST(GpuPolicy, MutexRefusalsSayWhy) {
  struct Case {
    const char* name;
    NodeView node;
    int count;
    Reason want;
    const char* message;
  };
  const Case cases[] = {
      {"every GPU in use", Node({Gpu("GPU-a", 0), Gpu("GPU-b", 0)}, {{1, 100, 0}, {2, 200, 0}}), 1,
       Reason::kExclusiveDeviceAllocateConflict, "2 ExclusiveDeviceAllocateConflict"},
      {"fewer idle GPUs than asked", Node({Gpu("GPU-a", 0), Gpu("GPU-b", 0)}, {{1, 100, 0}}), 2,
       Reason::kNodeInsufficientDevice, "1 of 2 fit; GPUs rejected: 1 ExclusiveDeviceAllocate"},
  };
  for (const Case& c : cases) {
    NodeFit fit = FitPod(c.node, Ask({{c.count, 1000, -1, 0}}, "mutex"));
    ASSERT_FALSE(fit.ok) << c.name;
    EXPECT_EQ(fit.reason, c.want) << c.name << ": " << fit.message;
    EXPECT_NE(fit.message.find(c.message), std::string::npos) << c.name << ": " << fit.message;
  }
}

TEST(GpuPolicy, MutexCountsTheSamePodsEarlierContainers) {
  // As in HAMi, a GPU the pod's first container took is in use for its second container.
  const NodeView two = Node({Gpu("GPU-a", 0), Gpu("GPU-b", 0)}, {});
  NodeFit fit = FitPod(two, Ask({{1, 1000, -1, 0}, {1, 1000, -1, 0}}, "mutex"));
  ASSERT_TRUE(fit.ok) << fit.message;
  EXPECT_EQ(Uuids(fit.allocation.containers[0]), std::vector<std::string>{"GPU-a"});
  EXPECT_EQ(Uuids(fit.allocation.containers[1]), std::vector<std::string>{"GPU-b"});

  const NodeView one = Node({Gpu("GPU-a", 0)}, {});
  EXPECT_TRUE(FitPod(one, Ask({{1, 1000, -1, 0}, {1, 1000, -1, 0}}, "binpack")).ok);
  NodeFit refused = FitPod(one, Ask({{1, 1000, -1, 0}, {1, 1000, -1, 0}}, "mutex"));
  ASSERT_FALSE(refused.ok);
  EXPECT_EQ(refused.reason, Reason::kExclusiveDeviceAllocateConflict) << refused.message;
}

TEST(GpuPolicy, CombinedRankingKeysApplyInTheOrderWritten) {
  // g0 and g1 on NUMA node 1, g2 and g3 on NUMA node 0; g0 and g2 half full, g1 and g3 empty.
  const NodeView node = Node({Gpu("GPU-0", 1), Gpu("GPU-1", 1), Gpu("GPU-2", 0), Gpu("GPU-3", 0)},
                             {kHalf, {}, kHalf, {}});
  struct Case {
    const char* policy;
    int count;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      // One key: ties keep node order.
      {"binpack", 1, {"GPU-0"}},
      {"spread", 1, {"GPU-1"}},
      {"numa", 3, {"GPU-2", "GPU-3", "GPU-0"}},
      // A second key breaks the first one's ties.
      {"binpack,numa", 1, {"GPU-2"}},
      {"spread,numa", 1, {"GPU-3"}},
      {"binpack,numa", 3, {"GPU-2", "GPU-0", "GPU-3"}},
      // numa first: a lower NUMA node's GPUs before the other's, ranked within it.
      {"numa,binpack", 2, {"GPU-2", "GPU-3"}},
      {"numa,spread", 2, {"GPU-3", "GPU-2"}},
      {"numa,spread", 3, {"GPU-3", "GPU-2", "GPU-1"}},
      // Rules do not rank: topology-aware without published scores, or mutex alone, ranks by
      // spread (HAMi's fallback); mutex also drops the half-full GPUs.
      {"topology-aware", 1, {"GPU-1"}},
      {"mutex", 2, {"GPU-1", "GPU-3"}},
      {"numa,mutex", 2, {"GPU-3", "GPU-1"}},
  };
  for (const Case& c : cases) {
    NodeFit fit = FitPod(node, Ask({{c.count, 1000, -1, 0}}, c.policy));
    ASSERT_TRUE(fit.ok) << c.policy << ": " << fit.message;
    EXPECT_EQ(Uuids(fit.allocation.containers[0]), c.want) << c.policy << " x" << c.count;
  }
}

TEST(GpuPolicy, TopologyAwareCombinesWithMutexAndBinpack) {
  // NVLinked pairs 0-1 and 2-3; GPU-0 holds a vGPU.
  NodeView node =
      Node({Gpu("GPU-0", 0), Gpu("GPU-1", 0), Gpu("GPU-2", 0), Gpu("GPU-3", 0)}, {{1, 100, 10}});
  node.pair_scores = {{"GPU-0", {{"GPU-1", 400}, {"GPU-2", 10}, {"GPU-3", 10}}},
                      {"GPU-1", {{"GPU-2", 10}, {"GPU-3", 10}}},
                      {"GPU-2", {{"GPU-3", 400}}}};
  struct Case {
    const char* policy;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      // Both pairs score the same; binpack's rank starts from the used GPU's pair.
      {"binpack,topology-aware", {"GPU-0", "GPU-1"}},
      // mutex leaves GPU-0 out, so the only whole pair left is 2-3.
      {"binpack,topology-aware,mutex", {"GPU-2", "GPU-3"}},
  };
  for (const Case& c : cases) {
    NodeFit fit = FitPod(node, Ask({{2, 1000, -1, 0}}, c.policy));
    ASSERT_TRUE(fit.ok) << c.policy << ": " << fit.message;
    std::vector<std::string> got = Uuids(fit.allocation.containers[0]);
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, c.want) << c.policy;
  }
}

TEST(GpuPolicy, NumaBindWithCombinedPolicies) {
  // NUMA 0: GPU-0 (half full), GPU-1 (idle); NUMA 1: GPU-2, GPU-3 (idle).
  const NodeView node =
      Node({Gpu("GPU-0", 0), Gpu("GPU-1", 0), Gpu("GPU-2", 1), Gpu("GPU-3", 1)}, {kHalf});
  struct Case {
    const char* policy;
    int count;
    bool ok;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      // binpack's best GPU is GPU-0, and its NUMA node holds two: the container stays there.
      {"binpack", 2, true, {"GPU-0", "GPU-1"}},
      // mutex leaves one GPU on NUMA 0, so the container moves whole to NUMA 1.
      {"binpack,mutex", 2, true, {"GPU-2", "GPU-3"}},
      // Three GPUs fit on no one NUMA node.
      {"spread,numa", 3, false, {}},
  };
  for (const Case& c : cases) {
    PodRequest pod = Ask({{c.count, 1000, -1, 0}}, c.policy);
    pod.numa_bind = true;
    NodeFit fit = FitPod(node, pod);
    ASSERT_EQ(fit.ok, c.ok) << c.policy << ": " << fit.message;
    if (c.ok) {
      EXPECT_EQ(Uuids(fit.allocation.containers[0]), c.want) << c.policy;
    } else {
      EXPECT_EQ(fit.reason, Reason::kNumaNotFit) << fit.message;
    }
  }
}

}  // namespace
}  // namespace vgpu::sched
