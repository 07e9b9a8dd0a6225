#include "sim/cluster/report.h"

#include <gtest/gtest.h>

namespace vgpu::sim {
namespace {

RunResult SmallRun(const char* node_policy) {
  RunResult r;
  r.scenario = "demo";
  r.policy = PolicyPair{node_policy, node_policy};
  r.pods_total = 3;
  r.pods_placed = 2;
  r.pods_pending = 1;
  r.wall_s = 0.5;
  r.api_requests = 15;
  GpuUsage g0{"n1", GpuInventory{"GPU-a", "NVIDIA A100", 10, 40960, 100, 0, true}, 6000, 20, 1,
              false};
  GpuUsage g1{"n1", GpuInventory{"GPU-b", "NVIDIA A100", 10, 40960, 100, 0, true}, 0, 0, 0, false};
  r.gpu_usage = {g0, g1};
  r.placements.push_back(
      PodPlacement{"default", "p0", "n1", {{"GPU-a", 6000, 20}}, 0.0, false, true});
  r.placements.push_back(
      PodPlacement{"default", "p1", "n1", {{"GPU-b", 1000, 10}}, 0.1, true, true});
  r.rejections.push_back(PodRejection{"default", "big", "n1: CardInsufficientMemory", false});
  for (int i = 1; i <= 100; ++i) r.schedule_ms.Add(i / 10.0);
  r.invariants.gpus_checked = 2;
  return r;
}

TEST(Report, RunTextHasEverySection) {
  const std::string text = RenderRunText(SmallRun("binpack"));
  for (const char* part :
       {"== demo  [node=binpack,gpu=binpack]", "2 of 3 pods placed", "default/p0",
        "gpu0(6000MiB,20%)", "completed", "GPU allocation", "1/10", "6000/40960", "14%",
        "Pods not placed: 1 (expected where they fit on no node; see Invariants)",
        "CardInsufficientMemory", "= 4.0 pods/s", "15 API server requests (7.5 per placed pod)",
        "p99 9.90 ms", "Invariants: OK"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
}

TEST(Report, LongTablesAreCut) {
  RunResult r = SmallRun("binpack");
  ReportOptions o;
  o.max_rows = 1;
  const std::string text = RenderRunText(r, o);
  EXPECT_NE(text.find("... 1 more"), std::string::npos) << text;
  EXPECT_EQ(text.find("default/p1"), std::string::npos);
}

TEST(Report, ViolationsAreListed) {
  RunResult r = SmallRun("binpack");
  r.invariants.violations.push_back("GPU GPU-a on n1: memory over-committed");
  const std::string text = RenderRunText(r);
  EXPECT_NE(text.find("VIOLATED (1)"), std::string::npos);
  EXPECT_NE(text.find("! GPU GPU-a on n1: memory over-committed"), std::string::npos);
  EXPECT_FALSE(RunToJson(r)["invariants"]["ok"].get<bool>());
}

// Refused binds are an outcome of binding beside the next filters, said in the summary line.
TEST(Report, RefusedBindsAreCountedNotAlarming) {
  RunResult r = SmallRun("binpack");
  EXPECT_EQ(RenderRunText(r).find("refused"), std::string::npos);
  r.binds_refused = 3;
  EXPECT_NE(RenderRunText(r).find("; binds refused and retried: 3 (GPU taken since the filter)"),
            std::string::npos)
      << RenderRunText(r);
  EXPECT_EQ(RunToJson(r)["binds_refused"].get<int>(), 3);
}

TEST(Report, QuotaChecksAreCountedOnlyWhereThereAreQuotas) {
  RunResult r = SmallRun("binpack");
  EXPECT_EQ(RenderRunText(r).find("quota"), std::string::npos);
  r.invariants.quotas_checked = 2;
  r.invariants.placements_checked = 7;
  EXPECT_NE(
      RenderRunText(r).find(", 2 namespace quota(s) never exceeded at 7 binds and at the end"),
      std::string::npos)
      << RenderRunText(r);
  EXPECT_EQ(RunToJson(r)["invariants"]["placements_checked"].get<int>(), 7);
}

TEST(Report, CordonAndMutexChecksAreCounted) {
  RunResult r = SmallRun("binpack");
  EXPECT_EQ(RenderRunText(r).find("cordoned"), std::string::npos);
  r.invariants.cordon_checks = 3;
  r.invariants.mutex_checks = 2;
  const std::string text = RenderRunText(r);
  EXPECT_NE(text.find(", 3 binds on no cordoned GPU, 2 mutex pods alone on their GPUs when placed"),
            std::string::npos)
      << text;
  EXPECT_EQ(RunToJson(r)["invariants"]["mutex_checks"].get<int>(), 2);
}

TEST(Report, ComparisonPutsPoliciesSideBySide) {
  RunResult spread = SmallRun("spread");
  spread.placements[0].node = "n2";
  const std::string text = RenderComparisonText({SmallRun("binpack"), spread});
  for (const char* part :
       {"node=binpack,gpu=binpack", "node=spread,gpu=spread", "PENDING", "n1 gpu0", "n2 gpu0",
        "(done)", "GPU      node=binpack", "Summary:", "GPUS IN USE"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  }
}

// The topology line and summary columns appear only when some node published pair scores.
TEST(Report, TopologyQualityOnlyWhereNodesPublishedScores) {
  RunResult plain = SmallRun("binpack");
  EXPECT_EQ(RenderRunText(plain).find("Topology:"), std::string::npos);
  EXPECT_EQ(RenderComparisonText({plain}).find("NVLINKED"), std::string::npos);
  RunResult aware = SmallRun("binpack");
  aware.policy.gpu_policy = "topology-aware";
  aware.topology = TopologyStats{1, 4, 3, 4 * 300.0};
  const std::string text = RenderRunText(aware);
  EXPECT_NE(text.find("Topology: 4 multi-GPU pods on nodes with pair scores, 3 (75%) on GPUs all "
                      "NVLinked to each other, mean pair score 300.0"),
            std::string::npos)
      << text;
  const std::string both = RenderComparisonText({plain, aware});
  for (const char* part : {"MULTI-GPU ALL NVLINKED", "MEAN PAIR SCORE", "3/4", "300.0", "0/0"}) {
    EXPECT_NE(both.find(part), std::string::npos) << part << "\n" << both;
  }
  const nlohmann::json j = RunToJson(aware);
  EXPECT_EQ(j["topology"]["multi_gpu_pods"], 4);
  EXPECT_EQ(j["topology"]["all_nvlinked"], 3);
  EXPECT_DOUBLE_EQ(j["topology"]["mean_pair_score"].get<double>(), 300.0);
}

TEST(Report, JsonCarriesCountsAndTiming) {
  const nlohmann::json j = RunToJson(SmallRun("spread"));
  EXPECT_EQ(j["pods"]["placed"], 2);
  EXPECT_EQ(j["pods"]["pending"], 1);
  EXPECT_EQ(j["placements"].size(), 2u);
  EXPECT_EQ(j["gpus"][0]["mem_used_mib"], 6000);
  EXPECT_DOUBLE_EQ(j["timing"]["pods_per_s"].get<double>(), 4.0);
  EXPECT_EQ(j["timing"]["api_requests"], 15);
  EXPECT_DOUBLE_EQ(j["timing"]["schedule"]["p99_ms"].get<double>(), 9.9);
  EXPECT_EQ(j["policy"]["node"], "spread");
}

}  // namespace
}  // namespace vgpu::sim
