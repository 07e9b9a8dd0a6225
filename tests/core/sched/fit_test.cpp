#include "core/sched/fit.h"

#include <gtest/gtest.h>

namespace vgpu::sched {
namespace {

GpuDevice Gpu(const std::string& uuid, int64_t mem = 24000, int numa = 0,
              const std::string& type = "NVIDIA-NVIDIA A100-PCIE-40GB") {
  GpuDevice g;
  g.uuid = uuid;
  g.slots = 10;
  g.mem_mib = mem;
  g.cores = 100;
  g.type = type;
  g.numa = numa;
  return g;
}

NodeView Node(std::vector<GpuDevice> gpus, std::vector<DeviceUsage> usage = {}) {
  NodeView n;
  n.name = "n1";
  n.gpus = std::move(gpus);
  usage.resize(n.gpus.size());
  n.usage = std::move(usage);
  return n;
}

PodRequest Ask(std::vector<ContainerRequest> app, GpuPolicy gp = GpuPolicy::kSpread) {
  PodRequest r;
  r.app_containers = std::move(app);
  r.gpu_policy = gp;
  return r;
}

std::vector<std::string> Uuids(const std::vector<AllocatedDevice>& devs) {
  std::vector<std::string> out;
  out.reserve(devs.size());
  for (const auto& d : devs) out.push_back(d.uuid);
  return out;
}

TEST(CheckGpu, ReasonsInOrder) {
  struct Case {
    const char* name;
    GpuDevice gpu;
    DeviceUsage used;
    bool cordoned;
    ContainerRequest req;
    std::optional<Reason> want;
  };
  GpuDevice sick = Gpu("GPU-s");
  sick.healthy = false;
  const Case cases[] = {
      {"fits", Gpu("GPU-a"), {}, false, {1, 1000, -1, 10}, std::nullopt},
      {"unhealthy", sick, {}, false, {1, 1000, -1, 10}, Reason::kCardNotHealth},
      {"cordoned", Gpu("GPU-a"), {}, true, {1, 1000, -1, 10}, Reason::kCardCordoned},
      {"slots exhausted",
       Gpu("GPU-a"),
       {10, 0, 0},
       false,
       {1, 1, -1, 0},
       Reason::kCardTimeSlicingExhausted},
      {"exclusive vs shared",
       Gpu("GPU-a"),
       {1, 100, 0},
       false,
       {1, 0, 100, 100},
       Reason::kExclusiveDeviceAllocateConflict},
      {"card held exclusively",
       Gpu("GPU-a"),
       {1, 100, 100},
       false,
       {1, 10, -1, 0},
       Reason::kCardComputeUnitsExhausted},
      {"memory exact fit", Gpu("GPU-a"), {1, 20000, 0}, false, {1, 4000, -1, 0}, std::nullopt},
      {"memory short by one",
       Gpu("GPU-a"),
       {1, 20001, 0},
       false,
       {1, 4000, -1, 0},
       Reason::kCardInsufficientMemory},
      {"percentage of card",
       Gpu("GPU-a"),
       {1, 12001, 0},
       false,
       {1, 0, 50, 0},
       Reason::kCardInsufficientMemory},
      {"cores short",
       Gpu("GPU-a"),
       {1, 0, 80},
       false,
       {1, 10, -1, 30},
       Reason::kCardInsufficientCore},
      {"cores exact", Gpu("GPU-a"), {1, 0, 70}, false, {1, 10, -1, 30}, std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CheckGpu(c.gpu, c.used, c.cordoned, c.req, PodRequest{}), c.want) << c.name;
  }
}

TEST(CheckGpu, Selectors) {
  struct Case {
    const char* name;
    std::vector<std::string> use, nouse;
    std::set<std::string> use_uuid, nouse_uuid;
    std::optional<Reason> want;
  };
  const Case cases[] = {
      {"no selectors", {}, {}, {}, {}, std::nullopt},
      {"use type matches substring", {"a100"}, {}, {}, {}, std::nullopt},
      {"use type mismatch", {"h100"}, {}, {}, {}, Reason::kCardTypeMismatch},
      {"one of several", {"h100", "a100"}, {}, {}, {}, std::nullopt},
      {"nouse type", {}, {"pcie"}, {}, {}, Reason::kCardTypeMismatch},
      // Case is ignored on the model's side (the pod's words arrive lower-cased).
      {"whole model name", {"nvidia-nvidia a100-pcie-40gb"}, {}, {}, {}, std::nullopt},
      {"at the very end", {"40gb"}, {}, {}, {}, std::nullopt},
      {"longer than the model name",
       {"nvidia-nvidia a100-pcie-40gbx"},
       {},
       {},
       {},
       Reason::kCardTypeMismatch},
      {"a prefix that repeats", {"nvidia a100"}, {}, {}, {}, std::nullopt},
      {"nouse at the very end", {}, {"40gb"}, {}, {}, Reason::kCardTypeMismatch},
      {"use uuid", {}, {}, {"GPU-a"}, {}, std::nullopt},
      {"use other uuid", {}, {}, {"GPU-b"}, {}, Reason::kCardUuidMismatch},
      {"nouse uuid", {}, {}, {}, {"GPU-a"}, Reason::kCardUuidMismatch},
  };
  for (const Case& c : cases) {
    PodRequest pod;
    pod.use_types = c.use;
    pod.nouse_types = c.nouse;
    pod.use_uuids = c.use_uuid;
    pod.nouse_uuids = c.nouse_uuid;
    EXPECT_EQ(CheckGpu(Gpu("GPU-a"), {}, false, {1, 10, -1, 0}, pod), c.want) << c.name;
  }
}

TEST(FitPod, GpuPolicyPicksTheRightCards) {
  // GPU-a is half full, GPU-b empty, GPU-c nearly full.
  const NodeView node =
      Node({Gpu("GPU-a"), Gpu("GPU-b"), Gpu("GPU-c")}, {{2, 12000, 50}, {}, {5, 20000, 90}});
  struct Case {
    const char* name;
    GpuPolicy policy;
    ContainerRequest req;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {"spread prefers emptiest", GpuPolicy::kSpread, {1, 1000, -1, 5}, {"GPU-b"}},
      {"binpack prefers fullest that fits", GpuPolicy::kBinpack, {1, 1000, -1, 5}, {"GPU-c"}},
      {"binpack skips what does not fit", GpuPolicy::kBinpack, {1, 5000, -1, 5}, {"GPU-a"}},
      {"two cards spread", GpuPolicy::kSpread, {2, 1000, -1, 0}, {"GPU-b", "GPU-a"}},
      {"three cards", GpuPolicy::kBinpack, {3, 1000, -1, 0}, {"GPU-c", "GPU-a", "GPU-b"}},
  };
  for (const Case& c : cases) {
    NodeFit fit = FitPod(node, Ask({c.req}, c.policy));
    ASSERT_TRUE(fit.ok) << c.name << ": " << fit.message;
    ASSERT_EQ(fit.allocation.containers.size(), 1u);
    EXPECT_EQ(Uuids(fit.allocation.containers[0]), c.want) << c.name;
  }
}

TEST(FitPod, NodeReasons) {
  GpuDevice h100 = Gpu("GPU-h", 80000, 0, "NVIDIA-NVIDIA H100 80GB HBM3");
  struct Case {
    const char* name;
    NodeView node;
    PodRequest pod;
    Reason want;
    const char* message;
  };
  PodRequest want_h100 = Ask({{1, 1000, -1, 0}});
  want_h100.use_types = {"h100"};
  PodRequest numa = Ask({{2, 1000, -1, 0}});
  numa.numa_bind = true;
  const Case cases[] = {
      {"too many GPUs", Node({Gpu("GPU-a"), Gpu("GPU-b")}), Ask({{3, 1000, -1, 0}}),
       Reason::kNodeInsufficientDevice, "needs 3 GPU(s), 2 of 2 fit"},
      {"all out of memory", Node({Gpu("GPU-a"), Gpu("GPU-b")}), Ask({{1, 30000, -1, 0}}),
       Reason::kCardInsufficientMemory, "2 CardInsufficientMemory"},
      {"mixed reasons: insufficient device", Node({Gpu("GPU-a"), h100}), Ask({{2, 30000, -1, 0}}),
       Reason::kNodeInsufficientDevice, "1 CardInsufficientMemory"},
      {"type", Node({Gpu("GPU-a"), Gpu("GPU-b")}), want_h100, Reason::kCardTypeMismatch,
       "2 CardTypeMismatch"},
      {"numa split", Node({Gpu("GPU-a", 24000, 0), Gpu("GPU-b", 24000, 1)}), numa,
       Reason::kNumaNotFit, "NUMA"},
      {"no GPUs at all", Node({}), Ask({{1, 1, -1, 0}}), Reason::kNodeInsufficientDevice, "0 of 0"},
  };
  for (const Case& c : cases) {
    NodeFit fit = FitPod(c.node, c.pod);
    ASSERT_FALSE(fit.ok) << c.name;
    EXPECT_EQ(fit.reason, c.want) << c.name << ": " << fit.message;
    EXPECT_EQ(fit.message.rfind(std::string(ReasonName(c.want)), 0), 0u) << fit.message;
    EXPECT_NE(fit.message.find(c.message), std::string::npos) << c.name << ": " << fit.message;
  }
}

GpuDevice ModeGpu(const std::string& uuid, const std::string& mode) {
  GpuDevice g = Gpu(uuid);
  g.mode = mode;
  return g;
}

// The no-mixing rule (docs/mps.md) over one GPU: which pod annotations a GPU of each mode takes.
TEST(CheckGpu, ModeTable) {
  struct Case {
    const char* gpu_mode;
    std::set<std::string> pod_modes;
    int count;
    bool fits;
  };
  const Case cases[] = {
      {"mps", {"mps"}, 1, true},
      {"mps", {"hami-core"}, 1, false},
      {"mps", {}, 1, true},  // no annotation: either mode; the pod runs as an MPS client
      {"mps", {"hami-core", "mps"}, 1, true},
      {"mps", {"mps"}, 2, false},  // a client reaches one daemon, and a daemon serves one GPU
      {"mps", {}, 2, false},
      {"hami-core", {"mps"}, 1, false},
      {"hami-core", {"hami-core"}, 1, true},
      {"hami-core", {}, 2, true},
      {"", {"hami-core"}, 1, true},  // a writer that left the mode out means hami-core
      {"", {"mps"}, 1, false},
      {"mig", {"mps"}, 1, false},
  };
  for (const Case& c : cases) {
    PodRequest pod;
    pod.modes = c.pod_modes;
    const auto got =
        CheckGpu(ModeGpu("GPU-a", c.gpu_mode), {}, false, {c.count, 1000, -1, 10}, pod);
    EXPECT_EQ(!got.has_value(), c.fits) << c.gpu_mode << " count " << c.count;
    if (got) {
      EXPECT_EQ(*got, Reason::kCardTypeMismatch) << c.gpu_mode;  // HAMi's word for it
    }
  }
}

// Over a node snapshot: the pod lands on GPUs of the mode it asks and the message says why the
// others were refused.
TEST(FitPod, ModeSelectionOverASnapshot) {
  struct Case {
    const char* name;
    NodeView node;
    std::set<std::string> modes;
    int count;
    std::vector<std::string> want;  // empty: refused
    const char* message;
  };
  const Case cases[] = {
      {"mps pod picks the mps GPU",
       Node({ModeGpu("GPU-a", "hami-core"), ModeGpu("GPU-b", "mps")}),
       {"mps"},
       1,
       {"GPU-b"},
       ""},
      {"hami-core pod picks the time-sliced GPU",
       Node({ModeGpu("GPU-a", "mps"), ModeGpu("GPU-b", "hami-core")}),
       {"hami-core"},
       1,
       {"GPU-b"},
       ""},
      {"mps pod on a time-sliced node",
       Node({ModeGpu("GPU-a", "hami-core")}),
       {"mps"},
       1,
       {},
       "1 CardTypeMismatch (pod asks nvidia.com/vgpu-mode mps)"},
      {"hami-core pod on an mps node",
       Node({ModeGpu("GPU-a", "mps"), ModeGpu("GPU-b", "mps")}),
       {"hami-core"},
       1,
       {},
       "2 CardTypeMismatch (pod asks nvidia.com/vgpu-mode hami-core)"},
      {"two vGPUs on an mps node",
       Node({ModeGpu("GPU-a", "mps"), ModeGpu("GPU-b", "mps")}),
       {},
       2,
       {},
       "(MPS GPUs take containers of one vGPU only)"},
      {"no annotation on an mps node", Node({ModeGpu("GPU-a", "mps")}), {}, 1, {"GPU-a"}, ""},
  };
  for (const Case& c : cases) {
    PodRequest pod = Ask({{c.count, 1000, -1, 0}});
    pod.modes = c.modes;
    NodeFit fit = FitPod(c.node, pod);
    EXPECT_EQ(fit.ok, !c.want.empty()) << c.name << ": " << fit.message;
    if (fit.ok) {
      EXPECT_EQ(Uuids(fit.allocation.containers[0]), c.want) << c.name;
    } else {
      EXPECT_EQ(fit.reason, Reason::kCardTypeMismatch) << c.name;
      EXPECT_NE(fit.message.find(c.message), std::string::npos) << c.name << ": " << fit.message;
    }
  }
}

TEST(FitPod, NumaBindKeepsContainerOnOneNumaNode) {
  NodeView node = Node({Gpu("GPU-a", 24000, 0), Gpu("GPU-b", 24000, 1), Gpu("GPU-c", 24000, 1)});
  PodRequest pod = Ask({{2, 1000, -1, 0}});
  pod.numa_bind = true;
  NodeFit fit = FitPod(node, pod);
  ASSERT_TRUE(fit.ok) << fit.message;
  EXPECT_EQ(Uuids(fit.allocation.containers[0]), (std::vector<std::string>{"GPU-b", "GPU-c"}));
}

TEST(FitPod, TopologyAwarePicksBestConnectedPair) {
  NodeView node = Node({Gpu("GPU-0"), Gpu("GPU-1"), Gpu("GPU-2"), Gpu("GPU-3")});
  node.pair_scores = {{"GPU-0", {{"GPU-1", 100}, {"GPU-2", 100}, {"GPU-3", 100}}},
                      {"GPU-1", {{"GPU-2", 100}, {"GPU-3", 600}}},
                      {"GPU-2", {{"GPU-3", 100}}}};
  NodeFit fit = FitPod(node, Ask({{2, 1000, -1, 0}}, GpuPolicy::kTopologyAware));
  ASSERT_TRUE(fit.ok) << fit.message;
  auto got = Uuids(fit.allocation.containers[0]);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"GPU-1", "GPU-3"}));
}

// A pod asking one GPU under topology-aware takes the candidate whose pair scores to the other
// candidates sum lowest (HAMi's computeWorstSingleCard), so NVLinked pairs stay whole for
// multi-GPU pods; ties, and nodes without scores, keep spread order. binpack and spread ignore
// the scores.
TEST(FitPod, TopologyAwareSingleGpuTakesTheLeastConnected) {
  // NVLinked pairs 0-1 and 2-3 (420), every other pair PCIe (10).
  const PairScores pairs = {{"GPU-0", {{"GPU-1", 420}, {"GPU-2", 10}, {"GPU-3", 10}}},
                            {"GPU-1", {{"GPU-2", 10}, {"GPU-3", 10}}},
                            {"GPU-2", {{"GPU-3", 420}}}};
  // Only 0-1 NVLinked; GPU-2 is a PCIe-only card.
  const PairScores one_pair = {{"GPU-0", {{"GPU-1", 420}, {"GPU-2", 10}}},
                               {"GPU-1", {{"GPU-2", 10}}}};
  const DeviceUsage full{10, 0, 0};         // every slot taken: not a candidate
  const DeviceUsage some{1, 4000, 10};      // one small vGPU: spread ranks it last
  const DeviceUsage no_room{1, 20000, 10};  // 4000 MiB left
  const auto four = [](std::vector<DeviceUsage> usage, PairScores scores) {
    NodeView n = Node({Gpu("GPU-0"), Gpu("GPU-1"), Gpu("GPU-2"), Gpu("GPU-3")}, std::move(usage));
    n.pair_scores = std::move(scores);
    return n;
  };
  NodeView three = Node({Gpu("GPU-0"), Gpu("GPU-1"), Gpu("GPU-2")});
  three.pair_scores = one_pair;
  struct Case {
    const char* name;
    NodeView node;
    GpuPolicy policy;
    int64_t mem;
    std::string want;
  };
  const Case cases[] = {
      {"partner of a full GPU is the orphan", four({full}, pairs), GpuPolicy::kTopologyAware, 1000,
       "GPU-1"},
      {"orphan beats the emptier GPUs of a whole pair", four({full, some}, pairs),
       GpuPolicy::kTopologyAware, 1000, "GPU-1"},
      {"spread takes the emptiest, breaking pair 2-3", four({full, some}, pairs),
       GpuPolicy::kSpread, 1000, "GPU-2"},
      {"binpack takes the fullest", four({full, {}, {}, some}, pairs), GpuPolicy::kBinpack, 1000,
       "GPU-3"},
      {"the PCIe-only card", three, GpuPolicy::kTopologyAware, 1000, "GPU-2"},
      {"equal sums keep spread order", four({some}, pairs), GpuPolicy::kTopologyAware, 1000,
       "GPU-1"},
      {"only candidates count: the orphan has no room", four({full, no_room}, pairs),
       GpuPolicy::kTopologyAware, 8000, "GPU-2"},
      {"no scores: spread order", four({some}, {}), GpuPolicy::kTopologyAware, 1000, "GPU-1"},
      {"one candidate", four({full, full, full}, pairs), GpuPolicy::kTopologyAware, 1000, "GPU-3"},
  };
  for (const Case& c : cases) {
    NodeFit fit = FitPod(c.node, Ask({{1, c.mem, -1, 10}}, c.policy));
    ASSERT_TRUE(fit.ok) << c.name << ": " << fit.message;
    EXPECT_EQ(Uuids(fit.allocation.containers[0]), std::vector<std::string>{c.want}) << c.name;
  }
}

TEST(FitPod, ContainersAccumulateAndInitContainersDoNot) {
  // One GPU with 10000 MiB. Init needs 8000 alone; two app containers need 5000 each.
  NodeView node = Node({Gpu("GPU-a", 10000)});
  PodRequest pod = Ask({{1, 5000, -1, 10}, {1, 5000, -1, 10}});
  pod.init_containers = {{1, 8000, -1, 0}, {}};
  NodeFit fit = FitPod(node, pod);
  ASSERT_TRUE(fit.ok) << fit.message;
  ASSERT_EQ(fit.allocation.containers.size(), 4u);
  EXPECT_EQ(fit.allocation.init_count, 2u);
  EXPECT_EQ(fit.allocation.containers[0], (std::vector<AllocatedDevice>{{"GPU-a", 8000, 0}}));
  EXPECT_TRUE(fit.allocation.containers[1].empty());
  EXPECT_EQ(PodFootprint(fit.allocation).at("GPU-a"), (DeviceUsage{2, 10000, 20}));

  // A third app container no longer fits: the app containers add up.
  pod.app_containers.push_back({1, 1, -1, 0});
  NodeFit full = FitPod(node, pod);
  EXPECT_FALSE(full.ok);
  EXPECT_NE(full.message.find("container 4"), std::string::npos) << full.message;
}

TEST(FitPod, PercentageResolvedPerCard) {
  NodeView node = Node({Gpu("GPU-a", 40000)});
  NodeFit fit = FitPod(node, Ask({{1, 0, 25, 30}}));
  ASSERT_TRUE(fit.ok);
  EXPECT_EQ(fit.allocation.containers[0], (std::vector<AllocatedDevice>{{"GPU-a", 10000, 30}}));
}

TEST(NodeScore, BinpackAndSpreadAreMirrored) {
  const NodeView empty = Node({Gpu("GPU-a", 10000), Gpu("GPU-b", 10000)});
  const NodeView busy =
      Node({Gpu("GPU-a", 10000), Gpu("GPU-b", 10000)}, {{8, 8000, 80}, {8, 8000, 80}});
  PodAllocation alloc;
  alloc.containers = {{{"GPU-a", 1000, 10}}};
  const ScoringWeights w;
  const int busy_bin = NodeScore(busy, alloc, NodePolicy::kBinpack, w);
  const int empty_bin = NodeScore(empty, alloc, NodePolicy::kBinpack, w);
  EXPECT_GT(busy_bin, empty_bin);
  EXPECT_EQ(NodeScore(busy, alloc, NodePolicy::kSpread, w), 10 - busy_bin);
  EXPECT_LT(NodeScore(busy, alloc, NodePolicy::kSpread, w),
            NodeScore(empty, alloc, NodePolicy::kSpread, w));
  for (const NodeView* n : {&empty, &busy}) {
    for (NodePolicy p : {NodePolicy::kBinpack, NodePolicy::kSpread}) {
      const int s = NodeScore(*n, alloc, p, w);
      EXPECT_GE(s, 0);
      EXPECT_LE(s, 10);
    }
  }
}

TEST(PodFootprint, InitPeakVersusAppSum) {
  struct Case {
    const char* name;
    PodAllocation alloc;
    std::map<std::string, DeviceUsage> want;
  };
  const Case cases[] = {
      {"apps only", {{{{"GPU-a", 100, 10}}, {{"GPU-a", 200, 20}}}, 0}, {{"GPU-a", {2, 300, 30}}}},
      {"init bigger", {{{{"GPU-a", 900, 0}}, {{"GPU-a", 200, 20}}}, 1}, {{"GPU-a", {1, 900, 20}}}},
      {"init on other GPU",
       {{{{"GPU-b", 900, 50}}, {{"GPU-a", 200, 20}}}, 1},
       {{"GPU-a", {1, 200, 20}}, {"GPU-b", {1, 900, 50}}}},
      {"two inits: peak",
       {{{{"GPU-a", 900, 0}}, {{"GPU-a", 500, 60}}, {}}, 2},
       {{"GPU-a", {1, 900, 60}}}},
  };
  for (const Case& c : cases) EXPECT_EQ(PodFootprint(c.alloc), c.want) << c.name;
}

}  // namespace
}  // namespace vgpu::sched
