// The simulated cluster end to end: the real extender, webhook, device plugins (real gRPC unix
// sockets for the small scenario), simulated kubelets and the in-process API server.

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "sim/cluster/extender_factory.h"
#include "sim/cluster/generator.h"
#include "sim/cluster/live_cluster.h"
#include "sim/cluster/report.h"
#include "sim/cluster/runner.h"

namespace vgpu::sim {
namespace {

using nlohmann::json;

RunOptions Options(PluginMode mode) {
  RunOptions o;
  o.extender = RealExtenderFactory();
  o.plugins = mode;
  return o;
}

int GpusInUse(const RunResult& r) {
  int n = 0;
  for (const GpuUsage& u : r.gpu_usage) n += u.slots_used > 0;
  return n;
}

TEST(SimLive, BuiltinScenarioOverGrpcSocketsBothPolicies) {
  auto sc = ParseScenarioYaml(BuiltinScenarioYaml());
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  std::vector<RunResult> runs;
  for (const PolicyPair& p : sc->policies) {
    auto run = RunScenario(*sc, p, Options(PluginMode::kGrpc));
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    runs.push_back(std::move(*run));
  }
  for (const RunResult& r : runs) {
    SCOPED_TRACE(r.policy.Label());
    EXPECT_TRUE(r.invariants.ok()) << RenderRunText(r);
    EXPECT_EQ(r.pods_placed + r.pods_pending + r.pods_denied, r.pods_total) << RenderRunText(r);
    EXPECT_GE(r.pods_placed, 15) << RenderRunText(r);
    EXPECT_EQ(r.allocate_failures, 0);
    // The 60000 MiB pod fits no card of this cluster: pending with the extender's reasons.
    bool huge_pending = false;
    for (const PodRejection& x : r.rejections) {
      if (x.name == "huge") {
        huge_pending = !x.denied && x.reason.find("0/3 nodes are available") == 0;
      }
    }
    EXPECT_TRUE(huge_pending) << RenderRunText(r);
    for (const PodPlacement& p : r.placements) {
      if (!p.completed) {
        EXPECT_TRUE(p.running) << p.name << " never got its Allocate answer";
      }
    }
  }
  // binpack fills fewer GPUs than spread with the same pods.
  EXPECT_LT(GpusInUse(runs[0]), GpusInUse(runs[1])) << RenderComparisonText(runs);
}

TEST(SimLive, AllocateEnvReachesThePod) {
  Scenario sc;
  sc.name = "env";
  sc.nodes.push_back(NodeSpec{"n0", {GpuSpec{"GPU-env-0", "NVIDIA A100", 40960, 0}}, ""});
  PodSpec p;
  p.name = "p";
  p.gpus = 1;
  p.mem_mib = 3000;
  p.cores = 30;
  sc.pods.push_back(p);
  sc.policies.push_back(PolicyPair{});
  auto cluster = LiveCluster::Start(sc, sc.policies[0], Options(PluginMode::kGrpc));
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  LiveCluster& c = **cluster;
  auto admitted = c.extender().Admit(PodObject(p, sc.policies[0]));
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  ASSERT_TRUE(admitted->allowed) << admitted->message;
  EXPECT_EQ(admitted->pod["spec"]["schedulerName"], "hami-scheduler");
  auto created = c.api().Seed("pods", admitted->pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto f = c.extender().Filter(*created, c.node_names());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->feasible, std::vector<std::string>{"n0"});
  ASSERT_TRUE(c.extender().Bind("default", "p", (*created)["metadata"]["uid"], "n0").ok());
  ASSERT_TRUE(c.kubelets().WaitIdle(std::chrono::seconds(30)));
  auto pod = c.api().Get("pods", "default", "p");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["status"]["phase"], "Running") << pod->dump(2);
  const json env =
      json::parse((*pod)["metadata"]["annotations"][kAllocateEnvAnnotation].get<std::string>());
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0]["NVIDIA_VISIBLE_DEVICES"], "GPU-env-0");
  EXPECT_EQ(env[0]["CUDA_DEVICE_MEMORY_LIMIT_0"], "3000m");
  EXPECT_EQ(env[0]["CUDA_DEVICE_SM_LIMIT"], "30");
  EXPECT_EQ((*pod)["metadata"]["annotations"]["hami.io/bind-phase"], "success");
}

// Acceptance: 100 nodes x 8 GPUs, 2,000 pods of mixed requests; no GPU over-committed and every
// pod that fits is placed. Plugins are called in-process here to keep CI fast under ASan.
TEST(SimLive, HundredNodesTwoThousandPodsKeepInvariants) {
  GeneratorOptions g;
  g.nodes = 100;
  g.gpus_per_node = 8;
  g.pods = 2000;
  const Scenario sc = GenerateScenario(g);
  auto run = RunScenario(sc, sc.policies[0], Options(PluginMode::kInProcess));
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ReportOptions ro;
  ro.max_rows = 20;
  EXPECT_TRUE(run->invariants.ok()) << RenderRunText(*run, ro);
  EXPECT_EQ(run->pods_placed + run->pods_pending + run->pods_denied, 2000);
  EXPECT_GT(run->pods_placed, 1000);
  EXPECT_GT(run->pods_completed, 100);
  EXPECT_EQ(run->allocate_failures, 0);
  EXPECT_EQ(run->invariants.gpus_checked, 800);
  RecordProperty("pods_per_s", static_cast<int>(run->pods_per_s()));
  // Every bind and Allocate talks to the API server: a run that counted none measured nothing.
  EXPECT_GT(run->api_requests, run->pods_placed);
  RecordProperty("api_requests", static_cast<int>(run->api_requests));
}

// One node of 4 GPUs in NVLinked pairs 0-1 and 2-3, as its device plugin publishes them. Two small
// pods pinned to GPUs 1 and 2 arrive first, then two 2-GPU pods: binpack puts them on the fullest
// GPUs (1 and 2, across the pairs), topology-aware on the free pairs.
Scenario NvLinkPairsScenario() {
  Scenario sc;
  sc.name = "nvlink-pairs";
  NodeSpec node{"dgx", {}, "nvlink-pairs"};
  for (int i = 0; i < 4; ++i) {
    node.gpus.push_back(GpuSpec{"GPU-nv-" + std::to_string(i), "NVIDIA A100", 40960, 0});
  }
  sc.nodes.push_back(node);
  for (int gpu : {1, 2}) {
    PodSpec pin;
    pin.name = "pin-" + std::to_string(gpu);
    pin.gpus = 1;
    pin.mem_mib = 4000;
    pin.cores = 10;
    pin.annotations["nvidia.com/use-gpuuuid"] = "GPU-nv-" + std::to_string(gpu);
    sc.pods.push_back(pin);
  }
  for (int i = 0; i < 2; ++i) {
    PodSpec pair;
    pair.name = "pair-" + std::to_string(i);
    pair.arrival_s = 1;
    pair.gpus = 2;
    pair.mem_mib = 8000;
    pair.cores = 20;
    sc.pods.push_back(pair);
  }
  return sc;
}

TEST(SimLive, TopologyAwarePutsMultiGpuPodsOnFreeNvLinkPairs) {
  const Scenario sc = NvLinkPairsScenario();
  // The allocator-only nodes publish the scores without the plugin: the same annotation.
  for (PluginMode mode : {PluginMode::kInProcess, PluginMode::kAllocatorOnly}) {
    std::vector<RunResult> runs;
    for (const char* gpu : {"binpack", "topology-aware"}) {
      auto run = RunScenario(sc, PolicyPair{"binpack", gpu}, Options(mode));
      ASSERT_TRUE(run.ok()) << run.status().ToString();
      EXPECT_TRUE(run->invariants.ok()) << RenderRunText(*run);
      EXPECT_EQ(run->pods_placed, 4) << RenderRunText(*run);
      EXPECT_EQ(run->topology.scored_nodes, 1);
      EXPECT_EQ(run->topology.multi_gpu_pods, 2) << RenderRunText(*run);
      runs.push_back(std::move(*run));
    }
    const std::string report = RenderComparisonText(runs);
    EXPECT_EQ(runs[0].topology.all_nvlinked, 0) << report;  // binpack: GPUs 1 and 2, twice
    EXPECT_DOUBLE_EQ(runs[0].topology.mean_pair_score(), 10) << report;
    EXPECT_EQ(runs[1].topology.all_nvlinked, 2) << report;  // topology-aware: 0-1 and 2-3
    EXPECT_DOUBLE_EQ(runs[1].topology.mean_pair_score(), 420) << report;
  }
}

// sim/scenarios/preemption.yaml: both priority-1000 pods evict just the two priority-0 pods of
// one card each; the priority-0 pod that would need equal-priority pods gone evicts nobody.
TEST(SimLive, PreemptionEvictsOnlyTheLowerPriorityPodsThatMakeRoom) {
  std::ifstream in(std::string(VGPU_SCENARIO_DIR) + "/preemption.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto sc = ParseScenarioYaml(text.str());
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  RunOptions o = Options(PluginMode::kInProcess);
  o.async_bind = false;
  for (const PolicyPair& p : sc->policies) {
    auto run = RunScenario(*sc, p, o);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    SCOPED_TRACE(p.Label());
    EXPECT_TRUE(run->invariants.ok()) << RenderRunText(*run);
    EXPECT_EQ(run->preemptions, 2) << RenderRunText(*run);
    EXPECT_EQ(run->pods_preempted, 4) << RenderRunText(*run);
    // Each preemption was a timed dry run; the report shows them.
    EXPECT_GE(run->preempt_ms.count(), 2u) << RenderRunText(*run);
    EXPECT_NE(RenderRunText(*run).find("dry runs)"), std::string::npos) << RenderRunText(*run);
    int highs = 0;
    for (const PodPlacement& pl : run->placements) {
      if (pl.preempted) {
        EXPECT_EQ(pl.name.rfind("low-", 0), 0u) << pl.name;
      }
      highs += pl.name.rfind("high-", 0) == 0 && !pl.preempted;
    }
    EXPECT_EQ(highs, 2) << RenderRunText(*run);
    ASSERT_EQ(run->pods_pending, 1) << RenderRunText(*run);
    EXPECT_EQ(run->rejections.back().name, "peer");
  }
}

// sim/scenarios/quota.yaml: team-a's pods are charged per GPU x GPUs against its ResourceQuota;
// the one that would pass 20000 MiB is denied by the webhook naming the quota, and a later pod
// fits once an earlier one has left. team-b, without a quota, is not limited.
TEST(SimLive, QuotaDeniesThePodOverItAndAdmitsOneAfterADeparture) {
  std::ifstream in(std::string(VGPU_SCENARIO_DIR) + "/quota.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto sc = ParseScenarioYaml(text.str());
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  RunOptions o = Options(PluginMode::kInProcess);
  o.async_bind = false;
  auto run = RunScenario(*sc, sc->policies[0], o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::string report = RenderRunText(*run);
  EXPECT_TRUE(run->invariants.ok()) << report;
  EXPECT_EQ(run->pods_denied, 1) << report;
  EXPECT_EQ(run->pods_pending, 0) << report;
  ASSERT_EQ(run->rejections.size(), 1u) << report;
  const PodRejection& r = run->rejections[0];
  EXPECT_EQ(r.ns + "/" + r.name, "team-a/notebook-1");
  EXPECT_TRUE(r.denied);
  EXPECT_NE(r.reason.find("ResourceQuotaExceeded: namespace team-a: GPU memory quota is 20000 MiB "
                          "(ResourceQuota gpu-quota limits.nvidia.com/gpumem), 18000 MiB in use, "
                          "this pod asks 4000 MiB"),
            std::string::npos)
      << r.reason;
  std::set<std::string> placed;
  for (const PodPlacement& pl : run->placements) {
    placed.insert(pl.name);
    // Turned away by the filter at 3 (quota), placed when short left at 1 + 5.
    if (pl.name == "late") {
      EXPECT_DOUBLE_EQ(pl.placed_at_s, 6.0) << report;
    }
  }
  EXPECT_EQ(placed, (std::set<std::string>{"train", "short", "notebook-0", "late", "other"}))
      << report;
  EXPECT_EQ(run->invariants.quotas_checked, 1);
  EXPECT_EQ(run->invariants.placements_checked, 5);
}

// The quota invariant can fail: the same scenario against an extender that never watches
// ResourceQuotas (as one started without quota support) places notebook-1 too, and the check
// after each bind names the namespace, the amounts and the pods.
TEST(SimLive, QuotaInvariantCatchesAnExtenderBlindToQuotas) {
  std::ifstream in(std::string(VGPU_SCENARIO_DIR) + "/quota.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto sc = ParseScenarioYaml(text.str());
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  RunOptions o = Options(PluginMode::kInProcess);
  o.async_bind = false;
  o.extender = [real = RealExtenderFactory()](const ExtenderSetup& setup) {
    ExtenderSetup blind = setup;
    blind.quota_namespaces.clear();  // no quota watch: the model holds no quota
    return real(blind);
  };
  auto run = RunScenario(*sc, sc->policies[0], o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->pods_denied, 0) << RenderRunText(*run);
  ASSERT_EQ(run->invariants.violations.size(), 1u) << RenderRunText(*run);
  EXPECT_EQ(run->invariants.violations[0].find(
                "namespace team-a: GPU memory quota exceeded, 22000 MiB placed of 20000 held by "
                "team-a/train, team-a/short, team-a/notebook-0, team-a/notebook-1 (at virtual "),
            0u)
      << run->invariants.violations[0];
}

// sim/scenarios/policies.yaml: every "binpack,mutex" pod is alone on its GPU (nothing leaves and
// no later pod shares, so any other pod there would have been there first); those that find no
// idle GPU wait with HAMi's word; the numa-bound 2-GPU pod keeps both GPUs on one NUMA node.
TEST(SimLive, PoliciesScenarioMutexAndNumaBind) {
  std::ifstream in(std::string(VGPU_SCENARIO_DIR) + "/policies.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto sc = ParseScenarioYaml(text.str());
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->policies.size(), 2u);
  const int want_pending[] = {1, 3};  // binpack packs node-a and leaves 2 of its GPUs idle
  for (size_t i = 0; i < sc->policies.size(); ++i) {
    const PolicyPair& p = sc->policies[i];
    auto run = RunScenario(*sc, p, Options(PluginMode::kInProcess));
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    SCOPED_TRACE(p.Label());
    const std::string report = RenderRunText(*run);
    EXPECT_TRUE(run->invariants.ok()) << report;
    std::map<std::string, int> pods_on_gpu;
    for (const PodPlacement& pl : run->placements) {
      for (const AllocatedVgpu& d : pl.devices) ++pods_on_gpu[d.uuid];
    }
    int solos = 0;
    for (const PodPlacement& pl : run->placements) {
      if (pl.name.rfind("solo-", 0) == 0) {
        ++solos;
        ASSERT_EQ(pl.devices.size(), 1u) << pl.name;
        EXPECT_EQ(pods_on_gpu[pl.devices[0].uuid], 1) << pl.name << " shares its GPU\n" << report;
      }
      if (pl.name == "pair-0" || pl.name == "pair") {
        ASSERT_EQ(pl.devices.size(), 2u) << report;
        const auto numa = [](const std::string& uuid) { return uuid.substr(0, 11); };
        EXPECT_EQ(numa(pl.devices[0].uuid), numa(pl.devices[1].uuid)) << report;
      }
    }
    EXPECT_EQ(solos, 7 - want_pending[i]) << report;
    // Invariant 5 checked each placed mutex pod against the pods already there when it bound.
    EXPECT_EQ(run->invariants.mutex_checks, 7 - want_pending[i]) << report;
    ASSERT_EQ(run->pods_pending, want_pending[i]) << report;
    for (const PodRejection& r : run->rejections) {
      EXPECT_EQ(r.name.rfind("solo-", 0), 0u) << r.name;
      EXPECT_NE(r.reason.find("ExclusiveDeviceAllocateConflict"), std::string::npos) << r.reason;
    }
  }
}

// sim/scenarios/cordon.yaml: hami.io/device-cordon from the start (GPU-a-0) and from 10 s to
// 20 s (GPU-b-0). No pod lands on a GPU while it is cordoned (invariant 5 at every bind, besides
// the placement times checked here), the pod already on GPU-b-0 keeps running, the pod pinned to
// GPU-b-0 is placed when the cordon is lifted, the one pinned to GPU-a-0 never.
TEST(SimLive, CordonKeepsNewPodsOffTheGpuWhileItLasts) {
  std::ifstream in(std::string(VGPU_SCENARIO_DIR) + "/cordon.yaml");
  std::stringstream text;
  text << in.rdbuf();
  auto sc = ParseScenarioYaml(text.str());
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  RunOptions o = Options(PluginMode::kInProcess);
  o.async_bind = false;
  auto run = RunScenario(*sc, sc->policies[0], o);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  const std::string report = RenderRunText(*run);
  EXPECT_TRUE(run->invariants.ok()) << report;
  EXPECT_EQ(run->invariants.cordon_checks, 7) << report;
  EXPECT_EQ(run->pods_placed, 7) << report;
  EXPECT_EQ(run->pods_pending, 2) << report;
  std::map<std::string, const PodPlacement*> by_name;
  for (const PodPlacement& pl : run->placements) {
    by_name[pl.name] = &pl;
    for (const AllocatedVgpu& d : pl.devices) {
      EXPECT_NE(d.uuid, "GPU-a-0") << pl.name << "\n" << report;
      if (d.uuid == "GPU-b-0" && pl.name != "keep") {
        EXPECT_GE(pl.placed_at_s, 20.0) << pl.name << "\n" << report;
      }
    }
  }
  ASSERT_TRUE(by_name.contains("keep") && by_name.contains("back")) << report;
  EXPECT_EQ(by_name["keep"]->devices[0].uuid, "GPU-b-0");
  EXPECT_TRUE(by_name["keep"]->running && !by_name["keep"]->completed) << report;
  EXPECT_EQ(by_name["back"]->devices[0].uuid, "GPU-b-0");
  EXPECT_DOUBLE_EQ(by_name["back"]->placed_at_s, 20.0) << report;
  bool blocked_cordoned = false;
  for (const PodRejection& r : run->rejections) {
    if (r.name == "blocked") blocked_cordoned = r.reason.find("CardCordoned") != std::string::npos;
  }
  EXPECT_TRUE(blocked_cordoned) << report;
}

// Acceptance: 100 binds to one node at once all succeed; the node lock queues them.
TEST(SimLive, HundredConcurrentBindsToOneNodeAllSucceed) {
  Scenario sc;
  sc.name = "one-node";
  sc.split_count = 20;
  NodeSpec node{"only", {}, ""};
  for (int i = 0; i < 8; ++i) {
    node.gpus.push_back(GpuSpec{"GPU-only-" + std::to_string(i), "NVIDIA H100", 81559, 0});
  }
  sc.nodes.push_back(node);
  sc.policies.push_back(PolicyPair{"binpack", "spread"});
  RunOptions o = Options(PluginMode::kInProcess);
  o.kubelet_workers = 8;
  // The binds queue on the node lock one Allocate after another; on a loaded CI machine under
  // ASan that can take longer than the default 30 s wait, which is not what this test is about.
  RealExtenderOptions eo;
  eo.lock_wait = std::chrono::seconds(240);
  o.extender = RealExtenderFactory(eo);
  auto cluster = LiveCluster::Start(sc, sc.policies[0], o);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  LiveCluster& c = **cluster;

  constexpr int kPods = 100;
  std::vector<json> pods;
  for (int i = 0; i < kPods; ++i) {
    PodSpec p;
    p.name = "burst-" + std::to_string(i);
    p.gpus = 1;
    p.mem_mib = 1000;
    p.cores = 5;
    auto admitted = c.extender().Admit(PodObject(p, sc.policies[0]));
    ASSERT_TRUE(admitted.ok() && admitted->allowed) << p.name;
    auto created = c.api().Seed("pods", admitted->pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    auto f = c.extender().Filter(*created, c.node_names());
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_EQ(f->feasible, std::vector<std::string>{"only"}) << p.name;
    pods.push_back(*created);
  }
  std::atomic<int> ok{0};
  std::vector<std::string> errors(kPods);
  std::vector<std::thread> threads;
  threads.reserve(kPods);
  for (int i = 0; i < kPods; ++i) {
    threads.emplace_back([&, i] {
      auto client = c.NewExtenderClient();
      if (!client.ok()) {
        errors[i] = client.status().ToString();
        return;
      }
      const json& meta = pods[i]["metadata"];
      Status s = (*client)->Bind("default", meta["name"], meta["uid"], "only");
      if (s.ok()) {
        ++ok;
      } else {
        errors[i] = s.ToString();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kPods; ++i) EXPECT_EQ(errors[i], "") << "bind of pod " << i;
  EXPECT_EQ(ok.load(), kPods);
  ASSERT_TRUE(c.kubelets().WaitIdle(std::chrono::seconds(60)));
  EXPECT_EQ(c.kubelets().allocate_failures(), 0) << testing::PrintToString(c.kubelets().failures());
  EXPECT_EQ(c.kubelets().pods_started(), kPods);
  auto snap = c.Snapshot();
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  const InvariantReport report = CheckInvariants(*snap);
  EXPECT_TRUE(report.ok()) << testing::PrintToString(report.violations);
  EXPECT_EQ(report.placed_pods_checked, kPods);
}

}  // namespace
}  // namespace vgpu::sim
