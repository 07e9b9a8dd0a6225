#include "sim/cluster/invariants.h"

#include <gtest/gtest.h>

#include "sim/cluster/request.h"

namespace vgpu::sim {
namespace {

PodSpec Asking(std::optional<int> gpus, std::optional<int64_t> mem, std::optional<int> percent,
               std::optional<int> cores) {
  PodSpec p;
  p.gpus = gpus;
  p.mem_mib = mem;
  p.mem_percent = percent;
  p.cores = cores;
  return p;
}

constexpr std::nullopt_t kNone = std::nullopt;

TEST(Request, HamiDefaults) {
  const struct {
    const char* what;
    PodSpec pod;
    VgpuRequest want;
  } cases[] = {
      {"no GPU resources", PodSpec{}, VgpuRequest{0, 0, 0, 0}},
      {"bare gpu: whole card", Asking(2, kNone, kNone, kNone), VgpuRequest{2, 0, 100, 100}},
      {"gpumem only adds gpu 1", Asking(kNone, 3000, kNone, kNone), VgpuRequest{1, 3000, 0, 0}},
      {"gpucores only: whole memory", Asking(kNone, kNone, kNone, 30), VgpuRequest{1, 0, 100, 30}},
      {"percentage", Asking(1, kNone, 25, kNone), VgpuRequest{1, 0, 25, 0}},
      {"gpumem wins over percentage", Asking(1, 10, 25, kNone), VgpuRequest{1, 10, 0, 0}},
      {"explicit gpu 0", Asking(0, 10, kNone, kNone), VgpuRequest{0, 0, 0, 0}},
  };
  for (const auto& c : cases) EXPECT_EQ(EffectiveRequest(c.pod), c.want) << c.what;

  RequestDefaults d;
  d.default_mem_mib = 5000;
  d.default_cores = 10;
  d.default_gpu_num = 2;
  EXPECT_EQ(EffectiveRequest(Asking(kNone, kNone, kNone, 30), d), (VgpuRequest{2, 5000, 0, 30}));
  EXPECT_EQ(EffectiveRequest(Asking(kNone, kNone, 50, kNone), d), (VgpuRequest{2, 0, 50, 10}));
  EXPECT_EQ(MemoryNeeded(VgpuRequest{1, 0, 25, 0}, 40000), 10000);
  EXPECT_EQ(MemoryNeeded(VgpuRequest{1, 700, 25, 0}, 40000), 700);
}

// Node "n" with two GPUs of 10000 MiB, 100 cores, 2 slots; "m" with one T4.
ClusterSnapshot Cluster() {
  ClusterSnapshot s;
  s.nodes.push_back(NodeInventory{"n",
                                  {GpuInventory{"GPU-a", "NVIDIA A100", 2, 10000, 100, 0, true},
                                   GpuInventory{"GPU-b", "NVIDIA A100", 2, 10000, 100, 1, true}}});
  s.nodes.push_back(
      NodeInventory{"m", {GpuInventory{"GPU-t", "Tesla T4", 2, 10000, 100, 0, true}}});
  return s;
}

PodState Placed(const char* name, const char* node, const std::vector<AllocatedVgpu>& devs) {
  PodState p{"default", name, node, VgpuRequest{static_cast<int>(devs.size()), 1, 0, 0}, {}, devs};
  return p;
}

PodState Pending(const char* name, VgpuRequest r, std::map<std::string, std::string> ann = {}) {
  return PodState{"default", name, "", r, std::move(ann), {}};
}

struct Case {
  const char* what;
  std::vector<PodState> pods;
  std::vector<std::string> want;  // substrings, one per expected violation, in order
};

TEST(Invariants, Table) {
  const Case cases[] = {
      {"empty cluster is fine", {}, {}},
      {"within capacity",
       {Placed("a", "n", {{"GPU-a", 6000, 50}}), Placed("b", "n", {{"GPU-a", 4000, 50}})},
       {}},
      {"memory over-committed",
       {Placed("a", "n", {{"GPU-a", 6000, 10}}), Placed("b", "n", {{"GPU-a", 4001, 10}})},
       {"GPU-a on n: memory over-committed, 10001 MiB"}},
      {"cores over-committed",
       {Placed("a", "n", {{"GPU-b", 1, 60}}), Placed("b", "n", {{"GPU-b", 1, 50}})},
       {"GPU-b on n: cores over-committed, 110%"}},
      {"slots over-committed",
       {Placed("a", "m", {{"GPU-t", 1, 0}}), Placed("b", "m", {{"GPU-t", 1, 0}}),
        Placed("c", "m", {{"GPU-t", 1, 0}})},
       {"slots over-committed, 3 vGPUs on 2 slots"}},
      {"exclusive shared",
       {Placed("a", "m", {{"GPU-t", 1, 100}}), Placed("b", "m", {{"GPU-t", 1, 0}})},
       {"exclusive vGPU"}},
      {"wrong count",
       {PodState{"default", "a", "n", VgpuRequest{2, 1, 0, 0}, {}, {{"GPU-a", 1, 0}}}},
       {"asked for 2 vGPU(s) but holds 1"}},
      {"same GPU twice",
       {Placed("a", "n", {{"GPU-a", 1, 0}, {"GPU-a", 1, 0}})},
       {"two vGPUs on the same GPU GPU-a"}},
      {"GPU of another node", {Placed("a", "n", {{"GPU-t", 1, 0}})}, {"of node m"}},
      {"unknown GPU", {Placed("a", "n", {{"GPU-zzz", 1, 0}})}, {"that no node has"}},
      {"pending but fits",
       {Pending("p", VgpuRequest{1, 5000, 0, 10})},
       {"default/p is pending but fits node n"}},
      {"pending and truly full",
       {Placed("a", "n", {{"GPU-a", 10000, 0}}), Placed("b", "n", {{"GPU-b", 10000, 0}}),
        Placed("c", "m", {{"GPU-t", 9000, 0}}), Pending("p", VgpuRequest{1, 5000, 0, 10})},
       {}},
      {"pending: two GPUs on one node needed, none has two free",
       {Placed("a", "n", {{"GPU-a", 10000, 0}}), Pending("p", VgpuRequest{2, 1000, 0, 0})},
       {}},
      {"pending whole card but every card is in use",
       {Placed("a", "n", {{"GPU-a", 1, 0}}), Placed("b", "n", {{"GPU-b", 1, 0}}),
        Placed("c", "m", {{"GPU-t", 1, 0}}), Pending("p", VgpuRequest{1, 0, 100, 100})},
       {}},
      {"pending: type selector excludes the free T4",
       {Placed("a", "n", {{"GPU-a", 10000, 0}}), Placed("b", "n", {{"GPU-b", 10000, 0}}),
        Pending("p", VgpuRequest{1, 100, 0, 0}, {{"nvidia.com/use-gputype", "a100,h100"}})},
       {}},
      {"pending: nouse-gputype excluding A100 still fits the T4",
       {Pending("p", VgpuRequest{1, 100, 0, 0}, {{"nvidia.com/nouse-gputype", "A100"}})},
       {"fits node m"}},
      {"pending: uuid selector",
       {Placed("a", "m", {{"GPU-t", 10000, 0}}),
        Pending("p", VgpuRequest{1, 100, 0, 0}, {{"nvidia.com/use-gpuuuid", "GPU-t"}})},
       {}},
      {"pending: numa-bind needs both GPUs in one NUMA node",
       {Pending("p", VgpuRequest{2, 100, 0, 0}, {{"nvidia.com/numa-bind", "true"}})},
       {}},
      {"pending: mutex wants an idle GPU and every GPU holds a vGPU",
       {Placed("a", "n", {{"GPU-a", 1, 0}}), Placed("b", "n", {{"GPU-b", 1, 0}}),
        Placed("c", "m", {{"GPU-t", 1, 0}}),
        Pending("p", VgpuRequest{1, 100, 0, 0},
                {{"hami.io/gpu-scheduler-policy", "binpack,mutex"}})},
       {}},
      {"pending: mutex but an idle GPU is left",
       {Placed("a", "n", {{"GPU-a", 1, 0}}),
        Pending("p", VgpuRequest{1, 100, 0, 0}, {{"hami.io/gpu-scheduler-policy", "Mutex"}})},
       {"default/p is pending but fits node n"}},
      {"pending: percentage of a card that is half used",
       {Placed("a", "n", {{"GPU-a", 5001, 0}}), Placed("b", "n", {{"GPU-b", 5001, 0}}),
        Placed("c", "m", {{"GPU-t", 5001, 0}}), Pending("p", VgpuRequest{1, 0, 50, 0})},
       {}},
      {"pending: cores 0 cannot join an exclusive card",
       {Placed("a", "m", {{"GPU-t", 1, 100}}), Placed("b", "n", {{"GPU-a", 1, 100}}),
        Placed("c", "n", {{"GPU-b", 1, 100}}), Pending("p", VgpuRequest{1, 1, 0, 0})},
       {}},
  };
  for (const Case& c : cases) {
    ClusterSnapshot s = Cluster();
    s.pods = c.pods;
    const InvariantReport r = CheckInvariants(s);
    ASSERT_EQ(r.violations.size(), c.want.size())
        << c.what << ": " << testing::PrintToString(r.violations);
    for (size_t i = 0; i < c.want.size(); ++i) {
      EXPECT_NE(r.violations[i].find(c.want[i]), std::string::npos)
          << c.what << ": " << r.violations[i];
    }
    EXPECT_EQ(r.gpus_checked, 3) << c.what;
  }
}

TEST(Invariants, UnhealthyGpuIsNotCapacity) {
  ClusterSnapshot s = Cluster();
  for (NodeInventory& n : s.nodes) {
    for (GpuInventory& g : n.gpus) g.healthy = false;
  }
  s.pods.push_back(Pending("p", VgpuRequest{1, 1, 0, 0}));
  EXPECT_TRUE(CheckInvariants(s).ok());
  s.nodes[1].gpus[0].healthy = true;
  EXPECT_FALSE(CheckInvariants(s).ok());
}

// Invariant 4: a namespace's placed vGPUs, summed per GPU, within its quota; pods of other
// namespaces and pending pods are not charged.
TEST(Invariants, QuotaIsNeverExceeded) {
  ClusterSnapshot s = Cluster();
  s.quotas = {QuotaState{"team", 10000, 50}};
  PodState a = Placed("a", "n", {{"GPU-a", 4000, 10}, {"GPU-b", 4000, 10}});
  PodState b = Placed("b", "m", {{"GPU-t", 2000, 30}});
  a.ns = b.ns = "team";
  PodState elsewhere = Placed("c", "n", {{"GPU-a", 5000, 40}});
  s.pods = {a, b, elsewhere};
  EXPECT_TRUE(CheckInvariants(s).ok()) << testing::PrintToString(CheckInvariants(s).violations);

  b.allocated = {{"GPU-t", 2001, 31}};
  s.pods = {a, b, elsewhere};
  const InvariantReport r = CheckInvariants(s);
  ASSERT_EQ(r.violations.size(), 2u) << testing::PrintToString(r.violations);
  EXPECT_EQ(r.violations[0],
            "namespace team: GPU memory quota exceeded, 10001 MiB placed of 10000 held by "
            "team/a, team/b");
  EXPECT_EQ(r.violations[1],
            "namespace team: GPU cores quota exceeded, 51% placed of 50 held by team/a, team/b");

  // Only the limit that is set binds.
  s.quotas = {QuotaState{"team", std::nullopt, 50}};
  EXPECT_EQ(CheckInvariants(s).violations.size(), 1u);
}

// Invariant 3 with a quota: a pending pod that fits a GPU but not its namespace's quota is
// rightly pending; the same pod within the quota is not.
TEST(Invariants, PendingOverQuotaIsNoViolation) {
  ClusterSnapshot s = Cluster();
  PodState a = Placed("a", "n", {{"GPU-a", 6000, 10}});
  PodState p = Pending("p", VgpuRequest{1, 0, 50, 0});  // 50 % of a 10000-MiB card
  a.ns = p.ns = "team";
  s.pods = {a, p};
  s.quotas = {QuotaState{"team", 10000, std::nullopt}};
  EXPECT_TRUE(CheckInvariants(s).ok()) << testing::PrintToString(CheckInvariants(s).violations);
  s.quotas = {QuotaState{"team", 11000, std::nullopt}};
  const InvariantReport r = CheckInvariants(s);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_NE(r.violations[0].find("team/p is pending but fits node n"), std::string::npos);
}

TEST(Invariants, QuotaStatesTakeTheSmallestOfEveryKeyAndQuota) {
  auto q = QuotaStatesOf({QuotaSpec{"a",
                                    "q1",
                                    {{"limits.nvidia.com/gpumem", "20Gi"},
                                     {"requests.nvidia.com/gpumem", "30000"},
                                     {"nvidia.com/gpucores", "200"}}},
                          QuotaSpec{"a", "q2", {{"limits.nvidia.com/gpucores", "150"}}},
                          QuotaSpec{"b", "q", {{"nvidia.com/gpumem", "1000"}}}});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ASSERT_EQ(q->size(), 2u);
  EXPECT_EQ((*q)[0].ns, "a");
  EXPECT_EQ((*q)[0].mem_mib, 20480);
  EXPECT_EQ((*q)[0].cores, 150);
  EXPECT_EQ((*q)[1].mem_mib, 1000);
  EXPECT_EQ((*q)[1].cores, std::nullopt);
  auto bad = QuotaStatesOf({QuotaSpec{"a", "q1", {{"nvidia.com/gpumem", "lots"}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("quota a/q1 nvidia.com/gpumem"), std::string::npos)
      << bad.status().ToString();
}

// Invariant 5: what a bind had to respect when it was made. Both checks fail where they should.
TEST(Invariants, PlacementAvoidsCordonedGpusAndMutexSharesNothing) {
  PodState p = Placed("p", "n", {{"GPU-a", 1, 0}});
  const PodState other = Placed("o", "n", {{"GPU-a", 1, 0}});
  const PodState elsewhere = Placed("e", "n", {{"GPU-b", 1, 0}});
  EXPECT_TRUE(CheckPlacement(p, {}, {}).empty());
  EXPECT_TRUE(CheckPlacement(p, {"GPU-b"}, {}).empty());
  std::vector<std::string> v = CheckPlacement(p, {"GPU-b", "GPU-a"}, {});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0],
            "pod default/p on n: placed on GPU-a, which the node's hami.io/device-cordon named");
  // Without mutex, sharing is what vGPUs are for.
  EXPECT_FALSE(AsksForIdleGpu(p));
  EXPECT_TRUE(CheckPlacement(p, {}, {other}).empty());
  p.annotations["hami.io/gpu-scheduler-policy"] = "binpack, Mutex";
  EXPECT_TRUE(AsksForIdleGpu(p));
  EXPECT_TRUE(CheckPlacement(p, {}, {elsewhere, p}).empty());
  v = CheckPlacement(p, {}, {elsewhere, other});
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], "pod default/p on n: its GPU policy names mutex but GPU-a was held by default/o");
  EXPECT_EQ(CordonedUuids(" GPU-a, GPU-b ,,"), (std::set<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_TRUE(CordonedUuids("").empty());
}

// Invariant 3: a cordoned GPU is no capacity for a pending pod.
TEST(Invariants, CordonedGpuIsNotCapacity) {
  ClusterSnapshot s = Cluster();
  for (NodeInventory& n : s.nodes) {
    for (GpuInventory& g : n.gpus) g.cordoned = true;
  }
  s.pods.push_back(Pending("p", VgpuRequest{1, 1, 0, 0}));
  EXPECT_TRUE(CheckInvariants(s).ok());
  s.nodes[1].gpus[0].cordoned = false;
  EXPECT_FALSE(CheckInvariants(s).ok());
}

TEST(Invariants, UsageSumsEveryVgpu) {
  ClusterSnapshot s = Cluster();
  s.pods = {Placed("a", "n", {{"GPU-a", 100, 10}, {"GPU-b", 200, 20}}),
            Placed("b", "n", {{"GPU-a", 300, 30}})};
  const std::vector<GpuUsage> u = ComputeGpuUsage(s);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].gpu.uuid, "GPU-a");
  EXPECT_EQ(u[0].mem_used, 400);
  EXPECT_EQ(u[0].cores_used, 40);
  EXPECT_EQ(u[0].slots_used, 2);
  EXPECT_EQ(u[1].mem_used, 200);
  EXPECT_EQ(u[2].slots_used, 0);
  EXPECT_EQ(u[2].node, "m");
}

}  // namespace
}  // namespace vgpu::sim
