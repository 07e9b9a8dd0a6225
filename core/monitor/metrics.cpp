#include "core/monitor/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "core/prom/build_info.h"
#include "core/prom/exposition.h"

namespace vgpu::monitor {
namespace {

constexpr const char* kZone = "vGPU";
constexpr std::string_view kVendorPrefix = "NVIDIA-";

// One family's samples, keyed by their sorted label pairs: the map's order is client_golang's
// order (label values compared in label-name order, as every sample of a family has the same
// names), and a second sample with the same labels is dropped instead of making the page invalid
// (client_golang would fail the whole scrape on it).
struct Family {
  std::string name;
  std::string help;
  std::map<prom::Labels, double> samples;

  void Add(prom::Labels labels, double value) {
    labels.emplace_back("zone", kZone);
    std::sort(labels.begin(), labels.end());
    samples.emplace(std::move(labels), value);
  }
};

// Label values of HAMi's current names for one container's use of one GPU.
prom::Labels ContainerLabels(const ContainerGpuView& c, const std::string& uuid) {
  return {{"namespace", c.namespace_name},
          {"pod", c.pod},
          {"container", c.container},
          {"vdevice_index", std::to_string(c.vdevice_index)},
          {"device_uuid", uuid}};
}

// The same under the legacy names.
prom::Labels LegacyContainerLabels(const ContainerGpuView& c, const std::string& uuid) {
  return {{"podnamespace", c.namespace_name},
          {"podname", c.pod},
          {"ctrname", c.container},
          {"vdeviceid", std::to_string(c.vdevice_index)},
          {"deviceuuid", uuid}};
}

double Bytes(uint64_t v) {
  return static_cast<double>(v);
}

}  // namespace

std::string HostDeviceType(const std::string& snapshot_type) {
  // The snapshot's type is "NVIDIA-" + model for models without the vendor in front, the model
  // itself otherwise; NVML names of current GPUs start with "NVIDIA " (space), never "NVIDIA-".
  if (snapshot_type.starts_with(kVendorPrefix)) return snapshot_type;
  return std::string(kVendorPrefix) + snapshot_type;
}

std::string RenderMetrics(const NodeSnapshot& snapshot, int64_t now_unix_ms,
                          const MetricsOptions& options) {
  // HAMi v2.10 names (cmd/vGPUmonitor/metrics.go).
  Family host_mem{"hami_host_gpu_memory_used_bytes", "GPU device memory usage in bytes", {}};
  Family host_util{"hami_host_gpu_utilization_ratio", "GPU core utilization ratio (0-100)", {}};
  Family host_mc{"hami_host_gpu_memory_controller_utilization_ratio",
                 "GPU memory controller utilization ratio (0-100)",
                 {}};
  Family used{"hami_vgpu_memory_used_bytes", "vGPU device memory usage in bytes", {}};
  Family limit{"hami_vgpu_memory_limit_bytes",
               "vGPU device memory limit in bytes (the whole GPU when the container has none)",
               {}};
  Family ctr_mem{
      "hami_container_device_memory_bytes", "Container device memory usage in bytes", {}};
  Family ctr_util{"hami_container_device_utilization_ratio",
                  "Container device SM utilization ratio (0-100, of the whole GPU)",
                  {}};
  Family last_kernel{"hami_container_last_kernel_elapsed_seconds",
                     "Seconds since last kernel execution in container",
                     {}};
  // libvgpu measures a process's context, module and memory-pool overhead as one figure (what
  // the driver holds beyond the container's allocations), so module_bytes is always 0 and
  // context_bytes carries all of it.
  Family ctx{"hami_vgpu_memory_context_bytes",
             "Container device memory context size in bytes (vgpu: context, module and pool "
             "overhead measured together)",
             {}};
  Family module{"hami_vgpu_memory_module_bytes",
                "Container device memory module size in bytes (vgpu: always 0, counted in "
                "hami_vgpu_memory_context_bytes)",
                {}};
  Family buffer{"hami_vgpu_memory_buffer_bytes",
                "Container device memory buffer size in bytes (the container's allocations)",
                {}};
  // vgpu's own.
  Family sm_limit{"vgpu_container_sm_limit_ratio",
                  "SM limit of the container on the GPU in percent (100 when unlimited)",
                  {}};
  Family sharing{"vgpu_container_sm_sharing",
                 "1 while the GPU is shared with another active container (SM limits hold under "
                 "policy default), 0 while the container is alone (limit lifted)",
                 {}};
  Family unknown{"vgpu_monitor_unknown_pod_containers",
                 "Containers with a region whose pod the monitor does not know (yet); they are "
                 "left out of the per-container metrics",
                 {}};
  Family region_state{
      "vgpu_container_region_state",
      "1 for the state of the container's folder as the monitor reads it: ok, pending (a region "
      "being created), unusable (a region file refused: corrupt, foreign, a link; its processes "
      "are not seen) or over_limits (more files than the monitor reads; the rest ignored)",
      {}};
  Family states{"vgpu_monitor_containers",
                "Container folders the monitor watches, by state (unknown pods included)",
                {}};
  Family age{"vgpu_monitor_snapshot_age_seconds",
             "Seconds between the monitor's last tick and this scrape",
             {}};
  // Pre-v2.9 names (--legacy-metrics).
  Family l_host_mem{"HostGPUMemoryUsage", "GPU device memory usage", {}};
  Family l_host_util{"HostCoreUtilization", "GPU core utilization", {}};
  Family l_used{"vGPU_device_memory_usage_in_bytes", "vGPU device usage", {}};
  Family l_limit{"vGPU_device_memory_limit_in_bytes", "vGPU device limit", {}};
  Family l_desc{"Device_memory_desc_of_container", "Container device memory description", {}};
  Family l_util{
      "Device_utilization_desc_of_container", "Container device utilization description", {}};
  Family l_kernel{
      "Device_last_kernel_of_container", "Container device last kernel description", {}};

  const double age_s =
      snapshot.time_unix_ms > 0
          ? static_cast<double>(std::max<int64_t>(0, now_unix_ms - snapshot.time_unix_ms)) / 1000.0
          : 0.0;
  std::set<std::pair<std::string, std::string>> unknown_containers;

  for (const GpuView& g : snapshot.gpus) {
    // A GPU known only from the regions (no NVML) has no host figures: HAMi skips a device whose
    // memory query fails, and its utilization with it.
    if (!g.uuid.empty() && g.memory_total_bytes > 0) {
      const std::string type = HostDeviceType(g.type);
      const std::string index = std::to_string(g.index);
      host_mem.Add({{"node", snapshot.node},
                    {"device_index", index},
                    {"device_uuid", g.uuid},
                    {"device_type", type}},
                   Bytes(g.memory_used_bytes));
      const prom::Labels legacy_host = {{"nodeid", snapshot.node},
                                        {"deviceidx", index},
                                        {"deviceuuid", g.uuid},
                                        {"devicetype", type}};
      if (options.legacy) l_host_mem.Add(legacy_host, Bytes(g.memory_used_bytes));
      if (g.utilization_percent) {
        host_util.Add({{"node", snapshot.node},
                       {"device_index", index},
                       {"device_uuid", g.uuid},
                       {"device_type", type}},
                      *g.utilization_percent);
        if (options.legacy) l_host_util.Add(legacy_host, *g.utilization_percent);
      }
      if (g.memory_utilization_percent) {
        host_mc.Add({{"device_index", index}, {"device_uuid", g.uuid}, {"device_type", type}},
                    *g.memory_utilization_percent);
      }
    }

    for (const ContainerGpuView& c : g.containers) {
      if (c.namespace_name.empty() || c.pod.empty()) {
        unknown_containers.emplace(c.pod_uid, c.container);
        continue;
      }
      if (g.uuid.empty()) continue;  // HAMi skips device records without a UUID
      const prom::Labels labels = ContainerLabels(c, g.uuid);
      const uint64_t limit_bytes =
          c.no_memory || c.memory_limit_bytes != 0 ? c.memory_limit_bytes : g.memory_total_bytes;
      used.Add(labels, Bytes(c.memory_used_bytes));
      limit.Add(labels, Bytes(limit_bytes));
      ctr_mem.Add(labels, Bytes(c.memory_used_bytes));
      ctr_util.Add(labels, c.utilization_percent);
      ctx.Add(labels, Bytes(c.memory_context_bytes));
      module.Add(labels, 0);
      buffer.Add(labels, Bytes(c.memory_buffer_bytes));
      std::optional<double> kernel_s;
      if (c.last_kernel_seconds_ago) {
        // Whole seconds, as HAMi's now_unix - last_kernel_unix.
        kernel_s = std::floor(std::max(0.0, *c.last_kernel_seconds_ago + age_s));
        last_kernel.Add(labels, *kernel_s);
      }
      sm_limit.Add(labels, c.sm_limit_percent > 0 ? c.sm_limit_percent : 100);
      if (c.sharing != Sharing::kUnknown)
        sharing.Add(labels, c.sharing == Sharing::kShared ? 1.0 : 0.0);

      if (options.legacy) {
        const prom::Labels ll = LegacyContainerLabels(c, g.uuid);
        l_used.Add(ll, Bytes(c.memory_used_bytes));
        l_limit.Add(ll, Bytes(limit_bytes));
        // HAMi's offset = total - context - module - buffer in uint64 arithmetic (it wraps if
        // the parts exceed the total; kept, as dashboards built on it expect HAMi's values).
        const uint64_t offset =
            c.memory_used_bytes - c.memory_context_bytes - c.memory_buffer_bytes;
        prom::Labels desc = ll;
        desc.emplace_back("context", std::to_string(c.memory_context_bytes));
        desc.emplace_back("module", "0");
        desc.emplace_back("data", std::to_string(c.memory_buffer_bytes));
        desc.emplace_back("offset", std::to_string(offset));
        l_desc.Add(desc, Bytes(c.memory_used_bytes));
        l_util.Add(ll, c.utilization_percent);
        if (kernel_s) l_kernel.Add(ll, *kernel_s);
      }
    }
  }
  unknown.Add({}, static_cast<double>(unknown_containers.size()));
  std::map<ContainerState, int> by_state = {{ContainerState::kOk, 0},
                                            {ContainerState::kPending, 0},
                                            {ContainerState::kUnusable, 0},
                                            {ContainerState::kOverLimits, 0}};
  for (const ContainerStatusView& c : snapshot.containers) {
    ++by_state[c.state];
    if (c.namespace_name.empty() || c.pod.empty()) continue;  // as the per-container families
    region_state.Add({{"namespace", c.namespace_name},
                      {"pod", c.pod},
                      {"container", c.container},
                      {"state", ContainerStateName(c.state)}},
                     1);
  }
  for (const auto& [state, count] : by_state) {
    states.Add({{"state", ContainerStateName(state)}}, count);
  }
  if (snapshot.time_unix_ms > 0) age.Add({}, age_s);

  // client_golang writes families sorted by name; hami_build_info (no zone) is one of them.
  std::vector<prom::MetricFamily> families;
  families.push_back(prom::BuildInfoMetric());
  if (const TickDurations& t = snapshot.tick_durations; t.count > 0) {
    prom::MetricFamily& f = families.emplace_back(
        "vgpu_monitor_tick_duration_seconds",
        "Wall time of the monitor's ticks (reading the regions, host processes and NVML, writing "
        "host PIDs and sharing flags), since it started",
        prom::MetricType::kHistogram);
    f.AddHistogram({{"zone", kZone}}, TickDurations::kBounds, t.cumulative, t.sum_seconds, t.count);
  }
  for (Family* f : {&host_mem,    &host_util,   &host_mc, &used,         &limit,  &ctr_mem,
                    &ctr_util,    &last_kernel, &ctx,     &module,       &buffer, &sm_limit,
                    &sharing,     &unknown,     &age,     &region_state, &states, &l_host_mem,
                    &l_host_util, &l_used,      &l_limit, &l_desc,       &l_util, &l_kernel}) {
    if (f->samples.empty()) continue;
    prom::MetricFamily& out = families.emplace_back(f->name, f->help);
    for (const auto& [labels, value] : f->samples) out.Add(labels, value);
  }
  std::sort(
      families.begin(), families.end(),
      [](const prom::MetricFamily& a, const prom::MetricFamily& b) { return a.name() < b.name(); });
  std::string page;
  for (const prom::MetricFamily& f : families) f.Render(page);
  return page;
}

}  // namespace vgpu::monitor
