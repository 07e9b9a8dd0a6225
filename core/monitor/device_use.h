#pragma once

// One container's use of one GPU, from the figures of its region: the memory and process fields of
// ContainerGpuView, whether the container is on the GPU (the sharing decision's input), its
// compute utilization; and the small naming rules of the snapshot.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/monitor/snapshot.h"

namespace vgpu::monitor {

// A container is on a GPU while one of its live processes holds memory there or ran a kernel there
// within this window (HAMi's monitor uses its recent_kernel countdown: ~10 s).
constexpr int64_t kRecentKernelNs = 30'000'000'000;

// One live process slot's figures on one device (atomic loads of the region's counters).
struct SlotUse {
  int32_t pid = 0;
  int32_t host_pid = 0;         // 0: not matched
  uint64_t mem_used = 0;        // tracked allocations
  uint64_t mem_overhead = 0;    // measured context/module/pool memory
  uint64_t last_kernel_ns = 0;  // CLOCK_MONOTONIC end of its last kernel there; 0 = none
};

struct DeviceUse {
  uint64_t memory_used = 0;     // Σ mem_used + mem_overhead
  uint64_t memory_buffer = 0;   // Σ mem_used
  uint64_t memory_context = 0;  // Σ mem_overhead
  std::optional<double> last_kernel_seconds_ago;
  bool on_gpu = false;
  std::vector<ProcessView> processes;
};

// `live`: the container's live slots (matched or unverified). Processes are listed under a device
// when they use it (memory or a recent kernel); with `single_device` (the region has one device
// record) every live process is, since there is nothing else it could be using.
DeviceUse SummarizeDeviceUse(const std::vector<SlotUse>& live, int64_t now_mono_ns,
                             bool single_device);

// The container's share of the GPU over the last tick, percent of the whole GPU (0-100): the sum of
// NVML's per-process smUtil over its host PIDs when NVML sampled any of them; otherwise the
// kernel-busy time its limiter measured (the device record's sm_busy_ns) over the tick's wall
// time; 0 when neither is known.
double ContainerUtilization(const std::vector<int32_t>& host_pids,
                            const std::map<int32_t, double>& sm_util_by_host_pid,
                            std::optional<uint64_t> busy_delta_ns, int64_t wall_delta_ns);

// sm_policy of a device record (VGPU_SM_POLICY_*; anything else reads as default).
CorePolicy CorePolicyFromRegion(uint32_t sm_policy);
// sm_sharing of a device record.
Sharing SharingFromRegion(int32_t sm_sharing);
int32_t SharingToRegion(Sharing s);

}  // namespace vgpu::monitor
