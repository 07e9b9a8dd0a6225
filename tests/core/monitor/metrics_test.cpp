#include "core/monitor/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "tests/core/prom/promtool_check.h"

namespace vgpu::monitor {
namespace {

constexpr int64_t kTickMs = 1'700'000'000'000;
constexpr int64_t kScrapeMs = kTickMs + 2'500;  // the snapshot is 2.5 s old at the scrape
constexpr uint64_t kMiB = 1024ULL * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;

const char* const kUuid0 = "GPU-11111111-2222-3333-4444-555555555555";
const char* const kUuid1 = "GPU-66666666-7777-8888-9999-000000000000";
const char* const kUuid2 = "GPU-cccccccc-dddd-eeee-ffff-000000000002";

// Three GPUs: an H100 with a known and an unknown pod's container, a V100 without utilization
// figures (NVML NOT_SUPPORTED) and a container without limits, and a GPU NVML did not report (no
// host figures) used by the first container's second vGPU.
NodeSnapshot Sample() {
  NodeSnapshot s;
  s.node = "node-1";
  s.time_unix_ms = kTickMs;

  GpuView& h100 = s.gpus.emplace_back();
  h100.index = 0;
  h100.uuid = kUuid0;
  h100.type = "NVIDIA H100 80GB HBM3";
  h100.memory_total_bytes = 80 * kGiB;
  h100.memory_used_bytes = 10 * kGiB;
  h100.utilization_percent = 42;
  h100.memory_utilization_percent = 7;
  ContainerGpuView& a = h100.containers.emplace_back();
  a.namespace_name = "default";
  a.pod = "train-0";
  a.pod_uid = "uid-a";
  a.container = "main";
  a.vdevice_index = 0;
  a.memory_used_bytes = 3000 * kMiB;
  a.memory_limit_bytes = 4000 * kMiB;
  a.memory_buffer_bytes = 2800 * kMiB;
  a.memory_context_bytes = 100 * kMiB;
  a.sm_limit_percent = 30;
  a.utilization_percent = 25.5;
  a.sharing = Sharing::kShared;
  a.last_kernel_seconds_ago = 3.7;
  ContainerGpuView& gone = h100.containers.emplace_back();
  gone.pod_uid = "uid-gone";
  gone.container = "old";
  gone.memory_used_bytes = 5 * kMiB;

  GpuView& v100 = s.gpus.emplace_back();
  v100.index = 1;
  v100.uuid = kUuid1;
  v100.type = "NVIDIA-Tesla V100-SXM2-16GB";
  v100.memory_total_bytes = 16 * kGiB;
  ContainerGpuView& b = v100.containers.emplace_back();
  b.namespace_name = "ml";
  b.pod = "infer";
  b.pod_uid = "uid-b";
  b.container = "worker";
  b.vdevice_index = 1;
  b.sharing = Sharing::kAlone;

  GpuView& unseen = s.gpus.emplace_back();
  unseen.index = 2;
  unseen.uuid = kUuid2;
  unseen.type = "NVIDIA A10";
  ContainerGpuView& c = unseen.containers.emplace_back();
  c.namespace_name = "default";
  c.pod = "train-0";
  c.pod_uid = "uid-a";
  c.container = "main";
  c.vdevice_index = 1;
  c.memory_used_bytes = 1 * kMiB;
  c.memory_limit_bytes = 2 * kMiB;
  c.memory_buffer_bytes = 1 * kMiB;
  c.sm_limit_percent = 30;
  c.last_kernel_seconds_ago = 0.2;
  return s;
}

std::vector<std::string> Lines(const std::string& page) {
  std::vector<std::string> out;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool HasLine(const std::string& page, const std::string& line) {
  const std::vector<std::string> lines = Lines(page);
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

// Label sets as client_golang writes them: sorted by name, zone="vGPU" from the wrapping
// registerer.
const std::string kHost0 =
    R"(device_index="0",device_type="NVIDIA-NVIDIA H100 80GB HBM3",device_uuid="GPU-11111111-2222-3333-4444-555555555555",node="node-1",zone="vGPU")";
const std::string kHost1 =
    R"(device_index="1",device_type="NVIDIA-Tesla V100-SXM2-16GB",device_uuid="GPU-66666666-7777-8888-9999-000000000000",node="node-1",zone="vGPU")";
const std::string kCtrA =
    R"(container="main",device_uuid="GPU-11111111-2222-3333-4444-555555555555",namespace="default",pod="train-0",vdevice_index="0",zone="vGPU")";
const std::string kCtrB =
    R"(container="worker",device_uuid="GPU-66666666-7777-8888-9999-000000000000",namespace="ml",pod="infer",vdevice_index="1",zone="vGPU")";
const std::string kCtrC =
    R"(container="main",device_uuid="GPU-cccccccc-dddd-eeee-ffff-000000000002",namespace="default",pod="train-0",vdevice_index="1",zone="vGPU")";

TEST(MonitorMetrics, WritesHamiV210NamesLabelsAndScales) {
  const std::string page = RenderMetrics(Sample(), kScrapeMs);
  const struct {
    std::string line;
    const char* why;
  } want[] = {
      // Host GPUs (notes §1a): bytes, percent 0-100; the memory controller has no node label.
      {"hami_host_gpu_memory_used_bytes{" + kHost0 + "} 10737418240", "host memory"},
      {"hami_host_gpu_memory_used_bytes{" + kHost1 + "} 0", "host memory, idle GPU"},
      {"hami_host_gpu_utilization_ratio{" + kHost0 + "} 42", "host utilization, percent"},
      {R"(hami_host_gpu_memory_controller_utilization_ratio{device_index="0",device_type="NVIDIA-NVIDIA H100 80GB HBM3",device_uuid="GPU-11111111-2222-3333-4444-555555555555",zone="vGPU"} 7)",
       "memory controller, no node label"},
      // Containers (notes §1b).
      {"hami_vgpu_memory_used_bytes{" + kCtrA + "} 3145728000", "used"},
      {"hami_vgpu_memory_limit_bytes{" + kCtrA + "} 4194304000", "limit"},
      {"hami_container_device_memory_bytes{" + kCtrA + "} 3145728000", "= used"},
      {"hami_container_device_utilization_ratio{" + kCtrA + "} 25.5", "percent of the GPU"},
      {"hami_container_last_kernel_elapsed_seconds{" + kCtrA + "} 6",
       "whole seconds at the scrape: floor(3.7 + 2.5)"},
      {"hami_vgpu_memory_context_bytes{" + kCtrA + "} 104857600", "context + module + pools"},
      {"hami_vgpu_memory_module_bytes{" + kCtrA + "} 0", "counted in context"},
      {"hami_vgpu_memory_buffer_bytes{" + kCtrA + "} 2936012800", "allocations"},
      {"hami_vgpu_memory_limit_bytes{" + kCtrB + "} 17179869184", "no limit: the whole GPU"},
      {"hami_container_device_utilization_ratio{" + kCtrB + "} 0", "idle container"},
      {"hami_vgpu_memory_used_bytes{" + kCtrC + "} 1048576", "GPU without NVML figures"},
      {"hami_container_last_kernel_elapsed_seconds{" + kCtrC + "} 2", "floor(0.2 + 2.5)"},
      // vgpu's own.
      {"vgpu_container_sm_limit_ratio{" + kCtrA + "} 30", "SM limit percent"},
      {"vgpu_container_sm_limit_ratio{" + kCtrB + "} 100", "unlimited = 100"},
      {"vgpu_container_sm_sharing{" + kCtrA + "} 1", "shared"},
      {"vgpu_container_sm_sharing{" + kCtrB + "} 0", "alone"},
      {R"(vgpu_monitor_unknown_pod_containers{zone="vGPU"} 1)", "the unknown pod's container"},
      {R"(vgpu_monitor_snapshot_age_seconds{zone="vGPU"} 2.5)", "tick to scrape"},
      {"# TYPE hami_vgpu_memory_used_bytes gauge", "every family is a gauge"},
  };
  for (const auto& w : want) EXPECT_TRUE(HasLine(page, w.line)) << w.why << "\n" << w.line;

  const struct {
    std::string fragment;
    const char* why;
  } absent[] = {
      {"uid-gone", "containers of unknown pods are left out"},
      {"container=\"old\"", "containers of unknown pods are left out"},
      {"hami_host_gpu_utilization_ratio{device_index=\"1\"", "V100: NOT_SUPPORTED, skipped"},
      {"memory_controller_utilization_ratio{device_index=\"1\"", "V100: NOT_SUPPORTED, skipped"},
      {"device_index=\"2\"", "no host figures for a GPU NVML did not report"},
      {"hami_container_last_kernel_elapsed_seconds{" + std::string("container=\"worker\""),
       "no kernel seen: absent"},
      {"vgpu_container_sm_sharing{" + kCtrC, "sharing unknown: absent"},
      {"HostGPUMemoryUsage", "legacy names only with the flag"},
      {"vGPU_device_memory_usage_in_bytes", "legacy names only with the flag"},
  };
  for (const auto& a : absent) {
    EXPECT_EQ(page.find(a.fragment), std::string::npos) << a.why << ": " << a.fragment;
  }
}

TEST(MonitorMetrics, BuildInfoHasNoZone) {
  const std::string page = RenderMetrics(Sample(), kScrapeMs);
  const size_t at = page.find("\nhami_build_info{");
  ASSERT_NE(at, std::string::npos) << page;
  const std::string line = page.substr(at + 1, page.find('\n', at + 1) - at - 1);
  EXPECT_EQ(line.find("zone="), std::string::npos) << line;
  EXPECT_EQ(line.substr(line.size() - 2), " 1") << line;
}

TEST(MonitorMetrics, FamiliesLabelsAndSeriesAreOrderedAsClientGolangWritesThem) {
  const std::string page = RenderMetrics(Sample(), kScrapeMs);
  std::vector<std::string> families;
  for (const std::string& l : Lines(page)) {
    if (l.starts_with("# TYPE ")) families.push_back(l.substr(7, l.find(' ', 7) - 7));
  }
  EXPECT_EQ(families, (std::vector<std::string>{
                          "hami_build_info",
                          "hami_container_device_memory_bytes",
                          "hami_container_device_utilization_ratio",
                          "hami_container_last_kernel_elapsed_seconds",
                          "hami_host_gpu_memory_controller_utilization_ratio",
                          "hami_host_gpu_memory_used_bytes",
                          "hami_host_gpu_utilization_ratio",
                          "hami_vgpu_memory_buffer_bytes",
                          "hami_vgpu_memory_context_bytes",
                          "hami_vgpu_memory_limit_bytes",
                          "hami_vgpu_memory_module_bytes",
                          "hami_vgpu_memory_used_bytes",
                          "vgpu_container_sm_limit_ratio",
                          "vgpu_container_sm_sharing",
                          "vgpu_monitor_containers",
                          "vgpu_monitor_snapshot_age_seconds",
                          "vgpu_monitor_unknown_pod_containers",
                      }));
  // Series of a family by label values: (main, GPU-1111…), (main, GPU-cccc…), (worker, …).
  std::vector<std::string> used;
  for (const std::string& l : Lines(page)) {
    if (l.starts_with("hami_vgpu_memory_used_bytes{")) used.push_back(l);
  }
  EXPECT_EQ(used, (std::vector<std::string>{
                      "hami_vgpu_memory_used_bytes{" + kCtrA + "} 3145728000",
                      "hami_vgpu_memory_used_bytes{" + kCtrC + "} 1048576",
                      "hami_vgpu_memory_used_bytes{" + kCtrB + "} 0",
                  }));
}

TEST(MonitorMetrics, AWholePageForOneContainer) {
  NodeSnapshot s;
  s.node = "n";
  s.time_unix_ms = kTickMs;
  GpuView& g = s.gpus.emplace_back();
  g.uuid = "GPU-1";
  g.type = "NVIDIA L4";
  g.memory_total_bytes = 1000;
  g.memory_used_bytes = 10;
  ContainerGpuView& c = g.containers.emplace_back();
  c.namespace_name = "ns";
  c.pod = "p";
  c.pod_uid = "u";
  c.container = "c";
  c.memory_used_bytes = 10;
  c.memory_limit_bytes = 100;
  c.memory_buffer_bytes = 6;
  c.memory_context_bytes = 4;
  std::string page = RenderMetrics(s, kTickMs);
  // hami_build_info comes first (sorted by name); its labels depend on the build.
  ASSERT_TRUE(page.starts_with("# HELP hami_build_info ")) << page;
  page = page.substr(page.find("# HELP hami_container_device_memory_bytes"));
  const std::string l =
      R"({container="c",device_uuid="GPU-1",namespace="ns",pod="p",vdevice_index="0",zone="vGPU"})";
  EXPECT_EQ(
      page,
      "# HELP hami_container_device_memory_bytes Container device memory usage in bytes\n"
      "# TYPE hami_container_device_memory_bytes gauge\n"
      "hami_container_device_memory_bytes" +
          l +
          " 10\n"
          "# HELP hami_container_device_utilization_ratio Container device SM utilization "
          "ratio (0-100, of the whole GPU)\n"
          "# TYPE hami_container_device_utilization_ratio gauge\n"
          "hami_container_device_utilization_ratio" +
          l +
          " 0\n"
          "# HELP hami_host_gpu_memory_used_bytes GPU device memory usage in bytes\n"
          "# TYPE hami_host_gpu_memory_used_bytes gauge\n"
          R"(hami_host_gpu_memory_used_bytes{device_index="0",device_type="NVIDIA-NVIDIA L4",device_uuid="GPU-1",node="n",zone="vGPU"} 10)"
          "\n"
          "# HELP hami_vgpu_memory_buffer_bytes Container device memory buffer size in bytes "
          "(the container's allocations)\n"
          "# TYPE hami_vgpu_memory_buffer_bytes gauge\n"
          "hami_vgpu_memory_buffer_bytes" +
          l +
          " 6\n"
          "# HELP hami_vgpu_memory_context_bytes Container device memory context size in bytes "
          "(vgpu: context, module and pool overhead measured together)\n"
          "# TYPE hami_vgpu_memory_context_bytes gauge\n"
          "hami_vgpu_memory_context_bytes" +
          l +
          " 4\n"
          "# HELP hami_vgpu_memory_limit_bytes vGPU device memory limit in bytes (the whole GPU "
          "when the container has none)\n"
          "# TYPE hami_vgpu_memory_limit_bytes gauge\n"
          "hami_vgpu_memory_limit_bytes" +
          l +
          " 100\n"
          "# HELP hami_vgpu_memory_module_bytes Container device memory module size in bytes "
          "(vgpu: always 0, counted in hami_vgpu_memory_context_bytes)\n"
          "# TYPE hami_vgpu_memory_module_bytes gauge\n"
          "hami_vgpu_memory_module_bytes" +
          l +
          " 0\n"
          "# HELP hami_vgpu_memory_used_bytes vGPU device memory usage in bytes\n"
          "# TYPE hami_vgpu_memory_used_bytes gauge\n"
          "hami_vgpu_memory_used_bytes" +
          l +
          " 10\n"
          "# HELP vgpu_container_sm_limit_ratio SM limit of the container on the GPU in "
          "percent (100 when unlimited)\n"
          "# TYPE vgpu_container_sm_limit_ratio gauge\n"
          "vgpu_container_sm_limit_ratio" +
          l +
          " 100\n"
          "# HELP vgpu_monitor_containers Container folders the monitor watches, by state "
          "(unknown pods included)\n"
          "# TYPE vgpu_monitor_containers gauge\n"
          "vgpu_monitor_containers{state=\"ok\",zone=\"vGPU\"} 0\n"
          "vgpu_monitor_containers{state=\"over_limits\",zone=\"vGPU\"} 0\n"
          "vgpu_monitor_containers{state=\"pending\",zone=\"vGPU\"} 0\n"
          "vgpu_monitor_containers{state=\"unusable\",zone=\"vGPU\"} 0\n"
          "# HELP vgpu_monitor_snapshot_age_seconds Seconds between the monitor's last tick "
          "and this scrape\n"
          "# TYPE vgpu_monitor_snapshot_age_seconds gauge\n"
          "vgpu_monitor_snapshot_age_seconds{zone=\"vGPU\"} 0\n"
          "# HELP vgpu_monitor_unknown_pod_containers Containers with a region whose pod the "
          "monitor does not know (yet); they are left out of the per-container metrics\n"
          "# TYPE vgpu_monitor_unknown_pod_containers gauge\n"
          "vgpu_monitor_unknown_pod_containers{zone=\"vGPU\"} 0\n");
}

TEST(MonitorMetrics, LegacyNamesComeAsWellWithTheFlag) {
  const std::string page = RenderMetrics(Sample(), kScrapeMs, {.legacy = true});
  const std::string host0 =
      R"(deviceidx="0",devicetype="NVIDIA-NVIDIA H100 80GB HBM3",deviceuuid="GPU-11111111-2222-3333-4444-555555555555",nodeid="node-1",zone="vGPU")";
  const std::string a =
      R"(ctrname="main",deviceuuid="GPU-11111111-2222-3333-4444-555555555555",podname="train-0",podnamespace="default",vdeviceid="0",zone="vGPU")";
  const std::string want[] = {
      "HostGPUMemoryUsage{" + host0 + "} 10737418240",
      "HostCoreUtilization{" + host0 + "} 42",
      "vGPU_device_memory_usage_in_bytes{" + a + "} 3145728000",
      "vGPU_device_memory_limit_in_bytes{" + a + "} 4194304000",
      // offset = total - context - module - buffer = 3000 - 100 - 0 - 2800 MiB.
      R"(Device_memory_desc_of_container{context="104857600",ctrname="main",data="2936012800",deviceuuid="GPU-11111111-2222-3333-4444-555555555555",module="0",offset="104857600",podname="train-0",podnamespace="default",vdeviceid="0",zone="vGPU"} 3145728000)",
      "Device_utilization_desc_of_container{" + a + "} 25.5",
      "Device_last_kernel_of_container{" + a + "} 6",
      // The current names stay.
      "hami_vgpu_memory_used_bytes{" + kCtrA + "} 3145728000",
  };
  for (const std::string& w : want) EXPECT_TRUE(HasLine(page, w)) << w;
  EXPECT_EQ(page.find("Device_last_kernel_of_container{ctrname=\"worker\""), std::string::npos);
  EXPECT_EQ(page.find("HostCoreUtilization{deviceidx=\"1\""), std::string::npos);
  // Upper-case names sort first, as in Go.
  EXPECT_LT(page.find("# TYPE Device_last_kernel_of_container"),
            page.find("# TYPE hami_build_info"));
  // Added, never instead: every line of the page without the flag (current names, HELP and TYPE
  // included) is on the page with it, as vGPUmonitor writes both (issue 46 item 4).
  std::istringstream current(RenderMetrics(Sample(), kScrapeMs));
  size_t lines = 0;
  for (std::string line; std::getline(current, line); ++lines) {
    EXPECT_TRUE(HasLine(page, line)) << "missing with --legacy-metrics: " << line;
  }
  EXPECT_GT(lines, 40u);
}

TEST(MonitorMetrics, DuplicateSeriesAreWrittenOnce) {
  NodeSnapshot s = Sample();
  s.gpus[0].containers.push_back(s.gpus[0].containers[0]);
  s.gpus[0].containers.back().memory_used_bytes = 1;
  const std::string page = RenderMetrics(s, kScrapeMs);
  EXPECT_TRUE(HasLine(page, "hami_vgpu_memory_used_bytes{" + kCtrA + "} 3145728000"));
  EXPECT_FALSE(HasLine(page, "hami_vgpu_memory_used_bytes{" + kCtrA + "} 1"));
}

TEST(MonitorMetrics, AnEmptyNodeStillWritesBuildInfoAndTheMonitorsOwn) {
  const std::string page = RenderMetrics(NodeSnapshot{}, kScrapeMs);
  EXPECT_NE(page.find("\nhami_build_info{"), std::string::npos);
  EXPECT_TRUE(HasLine(page, R"(vgpu_monitor_unknown_pod_containers{zone="vGPU"} 0)"));
  EXPECT_EQ(page.find("snapshot_age"), std::string::npos) << "no tick yet";
  EXPECT_EQ(page.find("hami_vgpu"), std::string::npos);
}

// Each container folder's state: per known pod (as the other per-container families), and counted
// by state for the whole node, unknown pods included, every state written (0 when none).
TEST(MonitorMetrics, ContainerStatesPerKnownPodAndCountedForTheNode) {
  NodeSnapshot s = Sample();
  s.containers.push_back({"default", "train-0", "uid-a", "main", ContainerState::kOk, 1, ""});
  s.containers.push_back(
      {"team", "evil", "uid-e", "main", ContainerState::kOverLimits, 4, "folder holds more"});
  s.containers.push_back({"", "", "uid-x", "c", ContainerState::kUnusable, 0, "r.cache: corrupt"});
  const std::string page = RenderMetrics(s, kScrapeMs);
  EXPECT_TRUE(HasLine(
      page,
      R"(vgpu_container_region_state{container="main",namespace="default",pod="train-0",state="ok",zone="vGPU"} 1)"));
  EXPECT_TRUE(HasLine(
      page,
      R"(vgpu_container_region_state{container="main",namespace="team",pod="evil",state="over_limits",zone="vGPU"} 1)"));
  EXPECT_EQ(page.find(R"(vgpu_container_region_state{container="c")"), std::string::npos)
      << "an unknown pod has no per-container series";
  EXPECT_TRUE(HasLine(page, R"(vgpu_monitor_containers{state="ok",zone="vGPU"} 1)"));
  EXPECT_TRUE(HasLine(page, R"(vgpu_monitor_containers{state="over_limits",zone="vGPU"} 1)"));
  EXPECT_TRUE(HasLine(page, R"(vgpu_monitor_containers{state="unusable",zone="vGPU"} 1)"));
  EXPECT_TRUE(HasLine(page, R"(vgpu_monitor_containers{state="pending",zone="vGPU"} 0)"));
}

// libvgpu's limit of 0 bytes (VGPU_DEVICE_FLAG_NO_MEMORY: nothing may be allocated) is a limit of
// 0, not "none" (which the page writes as the GPU's size).
TEST(MonitorMetrics, ALimitOfNoMemoryIsZeroNotTheGpu) {
  NodeSnapshot s = Sample();
  ContainerGpuView& a = s.gpus[0].containers[0];
  a.memory_limit_bytes = 0;
  const std::string unlimited = RenderMetrics(s, kScrapeMs);
  EXPECT_TRUE(HasLine(unlimited, "hami_vgpu_memory_limit_bytes{" + kCtrA + "} 85899345920"));
  a.no_memory = true;
  const std::string none = RenderMetrics(s, kScrapeMs);
  EXPECT_TRUE(HasLine(none, "hami_vgpu_memory_limit_bytes{" + kCtrA + "} 0"));
}

TEST(MonitorMetrics, TickDurationIsAHistogramOnceATickRan) {
  NodeSnapshot s = Sample();
  EXPECT_EQ(RenderMetrics(s, kScrapeMs).find("vgpu_monitor_tick_duration_seconds"),
            std::string::npos)
      << "no tick measured";
  s.tick_durations.Observe(0.00048828125);  // 2^-11: sums stay exact
  s.tick_durations.Observe(0.00390625);
  s.tick_durations.Observe(8);
  const std::string page = RenderMetrics(s, kScrapeMs);
  EXPECT_NE(page.find("# TYPE vgpu_monitor_tick_duration_seconds histogram\n"), std::string::npos);
  EXPECT_TRUE(
      HasLine(page, R"(vgpu_monitor_tick_duration_seconds_bucket{zone="vGPU",le="0.0005"} 1)"));
  EXPECT_TRUE(
      HasLine(page, R"(vgpu_monitor_tick_duration_seconds_bucket{zone="vGPU",le="0.005"} 2)"));
  EXPECT_TRUE(
      HasLine(page, R"(vgpu_monitor_tick_duration_seconds_bucket{zone="vGPU",le="2.5"} 2)"));
  EXPECT_TRUE(
      HasLine(page, R"(vgpu_monitor_tick_duration_seconds_bucket{zone="vGPU",le="+Inf"} 3)"));
  EXPECT_TRUE(HasLine(page, R"(vgpu_monitor_tick_duration_seconds_count{zone="vGPU"} 3)"));
  EXPECT_TRUE(
      HasLine(page, R"(vgpu_monitor_tick_duration_seconds_sum{zone="vGPU"} 8.00439453125)"));
}

TEST(MonitorMetrics, HostDeviceTypeIsAlwaysPrefixedAsHamisMonitorDoes) {
  EXPECT_EQ(HostDeviceType("NVIDIA A100-SXM4-80GB"), "NVIDIA-NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(HostDeviceType("NVIDIA-Tesla V100-SXM2-16GB"), "NVIDIA-Tesla V100-SXM2-16GB");
  EXPECT_EQ(HostDeviceType(""), "NVIDIA-");
}

TEST(MonitorMetrics, PromtoolAcceptsThePage) {
  NodeSnapshot s = Sample();
  s.tick_durations.Observe(0.002);
  s.gpus[0].containers[0].container = "quote\"back\\slash\nnewline";  // escaping
  const auto r = prom::testing::PromtoolCheck(RenderMetrics(s, kScrapeMs));
  if (!r) GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_EQ(r->output, "");
}

TEST(MonitorMetrics, PromtoolOnlyLintsTheLegacyNamesCamelCase) {
  const auto r = prom::testing::PromtoolCheck(RenderMetrics(Sample(), kScrapeMs, {.legacy = true}));
  if (!r) GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  // The page parses (exit 3 = lint findings only); every finding is a legacy name's spelling,
  // which HAMi's page has too.
  EXPECT_EQ(r->exit_code, 3) << r->output;
  EXPECT_EQ(r->problems.size(), 4U) << r->output;
  for (const std::string& l : r->problems) {
    EXPECT_NE(l.find("should be written in 'snake_case' not 'camelCase'"), std::string::npos) << l;
  }
}

}  // namespace
}  // namespace vgpu::monitor
