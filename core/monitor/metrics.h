#pragma once

// The node monitor's metrics page (`GET /metrics` on :9394): a NodeSnapshot written as HAMi
// v2.10's vGPUmonitor writes it (cmd/vGPUmonitor/metrics.go), so that HAMi's dashboard, alerts
// and recording rules work unchanged.
//
// What "as HAMi writes it" means here, because client_golang decides it there:
//  - every family is a gauge (but vgpu's own vgpu_monitor_tick_duration_seconds, a histogram)
//    and, except hami_build_info, carries the constant label zone="vGPU" (HAMi registers its
//    collector through WrapRegistererWith{zone});
//  - label pairs are written sorted by name, families sorted by name, samples of a family sorted
//    by their label values; families without samples are left out;
//  - per-container families cover only containers whose pod the monitor knows (HAMi iterates its
//    pod informer), and device records with a UUID.
// Scales: utilization in percent (0-100), memory in bytes, last kernel in whole seconds.
// docs/monitor.md "Metrics and API" lists every family.

#include <cstdint>
#include <string>

#include "core/monitor/snapshot.h"

namespace vgpu::monitor {

struct MetricsOptions {
  // Also write HAMi's pre-v2.9 names (HostGPUMemoryUsage, vGPU_device_memory_usage_in_bytes, ...)
  // next to the current ones, as vGPUmonitor --legacy-metrics does.
  bool legacy = false;
};

// The whole page in text format 0.0.4. `now_unix_ms` is the scrape time: HAMi computes the
// seconds since a container's last kernel at scrape time, we add the snapshot's age to the
// figure the last tick measured.
std::string RenderMetrics(const NodeSnapshot& snapshot, int64_t now_unix_ms,
                          const MetricsOptions& options = {});

// HAMi's monitor labels a host GPU "NVIDIA-" + the NVML name, always (so "NVIDIA-NVIDIA H100 ..."),
// while the scheduler's (and our snapshot's) device type adds the prefix only to names that do
// not start with "NVIDIA". Maps the latter to the former.
std::string HostDeviceType(const std::string& snapshot_type);

}  // namespace vgpu::monitor
