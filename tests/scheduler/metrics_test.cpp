#include "scheduler/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "scheduler/cluster_model.h"
#include "test_objects.h"
#include "tests/core/prom/promtool_check.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;

// One expected sample: metric name, labels exactly as on the wire (sorted by name, as HAMi's
// client_golang writes them), value.
struct Line {
  const char* name;
  const char* labels;
  const char* value;
};

std::string Text(const Line& l) {
  return std::string(l.name) + "{" + l.labels + "} " + l.value;
}

std::vector<std::string> SampleLines(const std::string& page) {
  std::vector<std::string> out;
  std::stringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.push_back(line);
  }
  return out;
}

// The HAMi-named samples of a page (everything but our vgpu_scheduler_* and hami_build_info).
std::multiset<std::string> HamiSamples(const std::string& page) {
  std::multiset<std::string> out;
  for (const std::string& l : SampleLines(page)) {
    if (l.starts_with("vgpu_scheduler_") || l.starts_with("hami_build_info")) continue;
    out.insert(l);
  }
  return out;
}

// Cores in percent (100 = the whole GPU, gpucores 30 = 30), memory in bytes (MiB x 2^20),
// device_cores = the GPU's total cores, device_memory_limit in MiB, the memory ratio a 0-1
// fraction, zone="vGPU" everywhere.
const Line kV210Lines[] = {
    {"hami_gpu_core_allocated_ratio",
     R"(device_index="0",device_type="NVIDIA A10",device_uuid="GPU-n1-0",node="n1",zone="vGPU")",
     "30"},
    {"hami_gpu_core_allocated_ratio",
     R"(device_index="1",device_type="NVIDIA A10",device_uuid="GPU-n1-1",node="n1",zone="vGPU")",
     "0"},
    {"hami_gpu_core_limit_ratio",
     R"(device_index="0",device_type="NVIDIA A10",device_uuid="GPU-n1-0",node="n1",zone="vGPU")",
     "100"},
    {"hami_gpu_core_limit_ratio",
     R"(device_index="1",device_type="NVIDIA A10",device_uuid="GPU-n1-1",node="n1",zone="vGPU")",
     "100"},
    {"hami_gpu_memory_allocated_bytes",
     R"(device_cores="100",device_index="0",device_type="NVIDIA A10",device_uuid="GPU-n1-0",node="n1",zone="vGPU")",
     "3145728000"},
    {"hami_gpu_memory_allocated_bytes",
     R"(device_cores="100",device_index="1",device_type="NVIDIA A10",device_uuid="GPU-n1-1",node="n1",zone="vGPU")",
     "0"},
    {"hami_gpu_memory_limit_bytes",
     R"(device_index="0",device_type="NVIDIA A10",device_uuid="GPU-n1-0",node="n1",zone="vGPU")",
     "25165824000"},
    {"hami_gpu_memory_limit_bytes",
     R"(device_index="1",device_type="NVIDIA A10",device_uuid="GPU-n1-1",node="n1",zone="vGPU")",
     "25165824000"},
    {"hami_gpu_shared_count",
     R"(device_index="0",device_type="NVIDIA A10",device_uuid="GPU-n1-0",node="n1",zone="vGPU")",
     "1"},
    {"hami_gpu_shared_count",
     R"(device_index="1",device_type="NVIDIA A10",device_uuid="GPU-n1-1",node="n1",zone="vGPU")",
     "0"},
    {"hami_node_gpu_memory_allocated_ratio",
     R"(device_index="0",device_type="NVIDIA A10",device_uuid="GPU-n1-0",node="n1",zone="vGPU")",
     "0.125"},
    {"hami_node_gpu_memory_allocated_ratio",
     R"(device_index="1",device_type="NVIDIA A10",device_uuid="GPU-n1-1",node="n1",zone="vGPU")",
     "0"},
    {"hami_node_gpu_overview",
     R"(device_cores="100",device_index="0",device_memory_limit="24000",device_type="NVIDIA A10",device_uuid="GPU-n1-0",node="n1",zone="vGPU")",
     "3145728000"},
    {"hami_node_gpu_overview",
     R"(device_cores="100",device_index="1",device_memory_limit="24000",device_type="NVIDIA A10",device_uuid="GPU-n1-1",node="n1",zone="vGPU")",
     "0"},
    {"hami_resource_quota_limit",
     R"(namespace="default",quota_name="nvidia.com/gpumem",zone="vGPU")", "12000"},
    {"hami_resource_quota_used",
     R"(limit="12000",namespace="default",quota_name="nvidia.com/gpumem",zone="vGPU")", "3000"},
    {"hami_resource_quota_used",
     R"(limit="0",namespace="default",quota_name="nvidia.com/gpucores",zone="vGPU")", "30"},
    {"hami_vgpu_core_allocated_ratio",
     R"(container_index="0",device_uuid="GPU-n1-0",namespace="default",node="n1",pod="p",zone="vGPU")",
     "30"},
    {"hami_vgpu_memory_allocated_bytes",
     R"(container_index="0",device_uuid="GPU-n1-0",namespace="default",node="n1",pod="p",zone="vGPU")",
     "3145728000"},
};

// The small cluster of the tables: node n1 with two A10s (24000 MiB, 100 cores each), pod
// default/p holding 3000 MiB and 30 cores of the first, and a gpumem quota on default.
class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest() {
    model_.UpsertNode(testing::GpuNode("n1", 2, 24000, "NVIDIA A10"));
    json pod = testing::GpuPod(
        "p",
        {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}});
    pod["spec"]["nodeName"] = "n1";
    pod["metadata"]["annotations"] = {
        {"hami.io/vgpu-devices-allocated", "GPU-n1-0,NVIDIA,3000,30:;"}};
    pod["status"]["phase"] = "Running";
    model_.UpsertPod(pod);
    model_.UpsertQuota(json::parse(R"({"metadata":{"name":"q","namespace":"default"},
        "spec":{"hard":{"limits.nvidia.com/gpumem":"12000"}}})"));
  }
  ClusterModel model_;
  SchedulerMetrics metrics_;
};

TEST_F(MetricsTest, HamiV210NamesLabelsAndScales) {
  std::multiset<std::string> expected;
  for (const Line& l : kV210Lines) expected.insert(Text(l));
  const std::string page = metrics_.Render(model_, /*legacy_too=*/false);
  EXPECT_EQ(HamiSamples(page), expected) << page;

  // hami_build_info: the first family, registered apart from the zone wrapper in HAMi.
  EXPECT_TRUE(page.starts_with("# HELP hami_build_info ")) << page;
  for (const std::string& l : SampleLines(page)) {
    if (l.starts_with("hami_build_info")) {
      EXPECT_EQ(l.find("zone="), std::string::npos) << l;
      EXPECT_TRUE(l.ends_with("} 1")) << l;
    }
  }
}

TEST_F(MetricsTest, LegacyNamesAndLabelNamesBesideTheCurrentOnes) {
  // --legacy-metrics: HAMi's pre-v2.9 names and label names, the same values (cores in percent),
  // in addition to every v2.10 sample (HAMi writes both; issue 46: they replaced them).
  // hami_resource_quota_limit has no legacy name.
  const Line want[] = {
      {"GPUDeviceCoreAllocated",
       R"(deviceidx="0",devicetype="NVIDIA A10",deviceuuid="GPU-n1-0",nodeid="n1",zone="vGPU")",
       "30"},
      {"GPUDeviceCoreAllocated",
       R"(deviceidx="1",devicetype="NVIDIA A10",deviceuuid="GPU-n1-1",nodeid="n1",zone="vGPU")",
       "0"},
      {"GPUDeviceCoreLimit",
       R"(deviceidx="0",devicetype="NVIDIA A10",deviceuuid="GPU-n1-0",nodeid="n1",zone="vGPU")",
       "100"},
      {"GPUDeviceCoreLimit",
       R"(deviceidx="1",devicetype="NVIDIA A10",deviceuuid="GPU-n1-1",nodeid="n1",zone="vGPU")",
       "100"},
      {"GPUDeviceMemoryAllocated",
       R"(devicecores="100",deviceidx="0",devicetype="NVIDIA A10",deviceuuid="GPU-n1-0",nodeid="n1",zone="vGPU")",
       "3145728000"},
      {"GPUDeviceMemoryAllocated",
       R"(devicecores="100",deviceidx="1",devicetype="NVIDIA A10",deviceuuid="GPU-n1-1",nodeid="n1",zone="vGPU")",
       "0"},
      {"GPUDeviceMemoryLimit",
       R"(deviceidx="0",devicetype="NVIDIA A10",deviceuuid="GPU-n1-0",nodeid="n1",zone="vGPU")",
       "25165824000"},
      {"GPUDeviceMemoryLimit",
       R"(deviceidx="1",devicetype="NVIDIA A10",deviceuuid="GPU-n1-1",nodeid="n1",zone="vGPU")",
       "25165824000"},
      {"GPUDeviceSharedNum",
       R"(deviceidx="0",devicetype="NVIDIA A10",deviceuuid="GPU-n1-0",nodeid="n1",zone="vGPU")",
       "1"},
      {"GPUDeviceSharedNum",
       R"(deviceidx="1",devicetype="NVIDIA A10",deviceuuid="GPU-n1-1",nodeid="n1",zone="vGPU")",
       "0"},
      {"nodeGPUMemoryPercentage", R"(deviceidx="0",deviceuuid="GPU-n1-0",nodeid="n1",zone="vGPU")",
       "0.125"},
      {"nodeGPUMemoryPercentage", R"(deviceidx="1",deviceuuid="GPU-n1-1",nodeid="n1",zone="vGPU")",
       "0"},
      {"nodeGPUOverview",
       R"(devicecores="100",deviceidx="0",devicememorylimit="24000",devicetype="NVIDIA A10",deviceuuid="GPU-n1-0",nodeid="n1",zone="vGPU")",
       "3145728000"},
      {"nodeGPUOverview",
       R"(devicecores="100",deviceidx="1",devicememorylimit="24000",devicetype="NVIDIA A10",deviceuuid="GPU-n1-1",nodeid="n1",zone="vGPU")",
       "0"},
      {"QuotaUsed",
       R"(limit="12000",quotaName="nvidia.com/gpumem",quotanamespace="default",zone="vGPU")",
       "3000"},
      {"QuotaUsed",
       R"(limit="0",quotaName="nvidia.com/gpucores",quotanamespace="default",zone="vGPU")", "30"},
      {"vGPUCoreAllocated",
       R"(containeridx="0",deviceuuid="GPU-n1-0",nodename="n1",podname="p",podnamespace="default",zone="vGPU")",
       "30"},
      {"vGPUMemoryAllocated",
       R"(containeridx="0",deviceuuid="GPU-n1-0",nodename="n1",podname="p",podnamespace="default",zone="vGPU")",
       "3145728000"},
  };
  std::multiset<std::string> expected;
  for (const Line& l : want) expected.insert(Text(l));
  for (const Line& l : kV210Lines) expected.insert(Text(l));
  const std::string page = metrics_.Render(model_, /*legacy_too=*/true);
  EXPECT_EQ(HamiSamples(page), expected) << page;
  // Families in name order as client_golang gathers them: the upper-case legacy names first.
  EXPECT_LT(page.find("# HELP GPUDeviceCoreAllocated "), page.find("# HELP hami_build_info "));
  EXPECT_LT(page.find("# HELP hami_build_info "),
            page.find("# HELP hami_gpu_core_allocated_ratio "));
  EXPECT_NE(page.find("\nhami_build_info{"), std::string::npos) << page;
}

TEST_F(MetricsTest, CoreScalingAndQuotaWithoutPods) {
  // deviceCoreScaling 2: the limit is 200; a namespace with a quota and no pods has entries only
  // for the resources its quota names; a GPU with no memory has no ratio.
  json node = testing::GpuNode("n2", 1, 0);
  json inv = json::parse(
      node["metadata"]["annotations"]["hami.io/node-nvidia-register"].get<std::string>());
  inv[0]["devcore"] = 200;
  node["metadata"]["annotations"]["hami.io/node-nvidia-register"] = inv.dump();
  model_.UpsertNode(node);
  model_.UpsertQuota(json::parse(R"({"metadata":{"name":"q","namespace":"idle"},
      "spec":{"hard":{"limits.nvidia.com/gpucores":"50"}}})"));
  const std::set<std::string> lines = [&] {
    const std::vector<std::string> v = SampleLines(metrics_.Render(model_, false));
    return std::set<std::string>(v.begin(), v.end());
  }();
  const std::string n2 =
      R"({device_index="0",device_type="NVIDIA A10",device_uuid="GPU-n2-0",node="n2",zone="vGPU"})";
  EXPECT_TRUE(lines.contains("hami_gpu_core_limit_ratio" + n2 + " 200"));
  EXPECT_TRUE(lines.contains(
      R"(hami_gpu_memory_allocated_bytes{device_cores="200",device_index="0",device_type="NVIDIA A10",device_uuid="GPU-n2-0",node="n2",zone="vGPU"} 0)"));
  EXPECT_FALSE(lines.contains("hami_node_gpu_memory_allocated_ratio" + n2 + " 0"));
  EXPECT_TRUE(lines.contains(
      R"(hami_resource_quota_used{limit="50",namespace="idle",quota_name="nvidia.com/gpucores",zone="vGPU"} 0)"));
  EXPECT_TRUE(lines.contains(
      R"(hami_resource_quota_limit{namespace="idle",quota_name="nvidia.com/gpucores",zone="vGPU"} 50)"));
  for (const std::string& l : lines) {
    EXPECT_FALSE(l.find("namespace=\"idle\",quota_name=\"nvidia.com/gpumem\"") != std::string::npos)
        << l;
  }
}

// A GPU the device plugin reports unhealthy and one the node's cordon annotation names are 0 with
// their reason word; the rest 1. Health wins where both hold (the filter checks it first). The
// annotation lifted and health back, every GPU is 1 again: the gauge follows the node live.
TEST_F(MetricsTest, GpuSchedulableFollowsHealthAndCordon) {
  json node = testing::GpuNode("n3", 3);
  json inv = json::parse(
      node["metadata"]["annotations"]["hami.io/node-nvidia-register"].get<std::string>());
  inv[0]["health"] = false;
  node["metadata"]["annotations"]["hami.io/node-nvidia-register"] = inv.dump();
  node["metadata"]["annotations"]["hami.io/device-cordon"] = "GPU-n3-1, GPU-n3-0";
  model_.UpsertNode(node);
  const auto samples = [&] {
    std::set<std::string> out;
    for (const std::string& l : SampleLines(metrics_.Render(model_, false))) {
      if (l.starts_with("vgpu_scheduler_gpu_schedulable{") && l.find("\"n3\"") != l.npos) {
        out.insert(l);
      }
    }
    return out;
  };
  EXPECT_EQ(
      samples(),
      (std::set<std::string>{
          R"(vgpu_scheduler_gpu_schedulable{device_uuid="GPU-n3-0",node="n3",reason="CardNotHealth"} 0)",
          R"(vgpu_scheduler_gpu_schedulable{device_uuid="GPU-n3-1",node="n3",reason="CardCordoned"} 0)",
          R"(vgpu_scheduler_gpu_schedulable{device_uuid="GPU-n3-2",node="n3",reason="none"} 1)"}));

  model_.UpsertNode(testing::GpuNode("n3", 3));
  EXPECT_EQ(
      samples(),
      (std::set<std::string>{
          R"(vgpu_scheduler_gpu_schedulable{device_uuid="GPU-n3-0",node="n3",reason="none"} 1)",
          R"(vgpu_scheduler_gpu_schedulable{device_uuid="GPU-n3-1",node="n3",reason="none"} 1)",
          R"(vgpu_scheduler_gpu_schedulable{device_uuid="GPU-n3-2",node="n3",reason="none"} 1)"}));
}

TEST_F(MetricsTest, EveryFamilyHasHelpAndTypeOnce) {
  metrics_.filter.Observe(std::chrono::microseconds(300));
  metrics_.Reject(sched::Reason::kCardInsufficientMemory);
  for (bool legacy : {false, true}) {
    const std::string page = metrics_.Render(model_, legacy);
    std::set<std::string> help;
    std::set<std::string> type;
    std::stringstream in(page);
    std::string line;
    std::string current;
    while (std::getline(in, line)) {
      if (line.starts_with("# HELP ")) {
        current = line.substr(7, line.find(' ', 7) - 7);
        EXPECT_TRUE(help.insert(current).second) << "HELP twice: " << current;
      } else if (line.starts_with("# TYPE ")) {
        const std::string name = line.substr(7, line.find(' ', 7) - 7);
        EXPECT_EQ(name, current) << "TYPE without its HELP just before";
        EXPECT_TRUE(type.insert(name).second) << "TYPE twice: " << name;
      } else {
        // Samples follow their family's HELP and TYPE without interruption.
        const std::string name = line.substr(0, line.find_first_of("{ "));
        EXPECT_TRUE(name == current || name == current + "_bucket" || name == current + "_sum" ||
                    name == current + "_count")
            << line << " after the HELP of " << current;
      }
    }
    EXPECT_EQ(help, type);
    EXPECT_TRUE(type.contains("vgpu_scheduler_bad_requests_total"));
    EXPECT_TRUE(type.contains("vgpu_scheduler_nodes"));
  }
}

TEST_F(MetricsTest, PromtoolChecksThePage) {
  metrics_.filter.Observe(std::chrono::microseconds(300));
  metrics_.bind.Observe(std::chrono::seconds(2));
  metrics_.Reject(sched::Reason::kCardInsufficientMemory);
  metrics_.bad_requests.fetch_add(2);
  // Lint findings that are HAMi's names themselves (kept for wire compatibility), by promtool's
  // wording; anything else promtool says fails the test.
  const std::set<std::string> hami_names = {
      R"(hami_gpu_shared_count non-histogram and non-summary metrics should not have "_count" suffix)"};
  std::set<std::string> legacy_names;
  for (const char* name :
       {"GPUDeviceCoreAllocated", "GPUDeviceCoreLimit", "GPUDeviceMemoryAllocated",
        "GPUDeviceMemoryLimit", "GPUDeviceSharedNum", "nodeGPUMemoryPercentage", "nodeGPUOverview",
        "QuotaUsed", "vGPUCoreAllocated", "vGPUMemoryAllocated"}) {
    legacy_names.insert(std::string(name) +
                        " metric names should be written in 'snake_case' not "
                        "'camelCase'");
  }
  legacy_names.insert("QuotaUsed label names should be written in 'snake_case' not 'camelCase'");
  for (bool legacy : {false, true}) {
    const std::optional<prom::testing::PromtoolResult> r =
        prom::testing::PromtoolCheck(metrics_.Render(model_, legacy));
    if (!r) {
      GTEST_SKIP() << "promtool not installed: apt-get install prometheus (scripts/install-deps.sh "
                      "does), or set VGPU_PROMTOOL";
    }
    // 0: clean; 3: lint findings only; 1 would mean the page does not parse.
    EXPECT_TRUE(r->exit_code == 0 || r->exit_code == 3) << r->exit_code << "\n" << r->output;
    for (const std::string& p : r->problems) {
      EXPECT_TRUE(hami_names.contains(p) || (legacy && legacy_names.contains(p)))
          << (legacy ? "legacy page: " : "page: ") << p;
    }
  }
}

}  // namespace
}  // namespace vgpu::scheduler
