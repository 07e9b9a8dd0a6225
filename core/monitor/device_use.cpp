#include "core/monitor/device_use.h"

#include <algorithm>

#include "vgpu/region_layout.h"

namespace vgpu::monitor {

namespace {

// The counters are the container's to write: a sum saturates instead of wrapping to a small figure.
uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}

// ns from `then` to `now` (CLOCK_MONOTONIC), 0 when `then` is not before `now`: a time written in
// the future (or beyond int64) reads as "just now", and nothing overflows.
uint64_t NsSince(uint64_t then, int64_t now) {
  const uint64_t n = now > 0 ? static_cast<uint64_t>(now) : 0;
  return then < n ? n - then : 0;
}

}  // namespace

DeviceUse SummarizeDeviceUse(const std::vector<SlotUse>& live, int64_t now_mono_ns,
                             bool single_device) {
  DeviceUse u;
  uint64_t newest_kernel = 0;
  for (const SlotUse& s : live) {
    const uint64_t memory = SaturatingAdd(s.mem_used, s.mem_overhead);
    u.memory_buffer = SaturatingAdd(u.memory_buffer, s.mem_used);
    u.memory_context = SaturatingAdd(u.memory_context, s.mem_overhead);
    u.memory_used = SaturatingAdd(u.memory_used, memory);
    newest_kernel = std::max(newest_kernel, s.last_kernel_ns);
    const bool recent_kernel = s.last_kernel_ns != 0 && NsSince(s.last_kernel_ns, now_mono_ns) <
                                                            static_cast<uint64_t>(kRecentKernelNs);
    const bool uses = memory > 0 || recent_kernel;
    u.on_gpu = u.on_gpu || uses;
    if (uses || single_device) u.processes.push_back(ProcessView{s.pid, s.host_pid, memory});
  }
  if (newest_kernel != 0) {
    u.last_kernel_seconds_ago = static_cast<double>(NsSince(newest_kernel, now_mono_ns)) / 1e9;
  }
  return u;
}

double ContainerUtilization(const std::vector<int32_t>& host_pids,
                            const std::map<int32_t, double>& sm_util_by_host_pid,
                            std::optional<uint64_t> busy_delta_ns, int64_t wall_delta_ns) {
  bool sampled = false;
  double sum = 0;
  for (int32_t pid : host_pids) {
    auto it = sm_util_by_host_pid.find(pid);
    if (pid == 0 || it == sm_util_by_host_pid.end()) continue;
    sampled = true;
    sum += it->second;
  }
  if (!sampled && busy_delta_ns && wall_delta_ns > 0) {
    sum = 100.0 * static_cast<double>(*busy_delta_ns) / static_cast<double>(wall_delta_ns);
  }
  return std::clamp(sum, 0.0, 100.0);
}

CorePolicy CorePolicyFromRegion(uint32_t sm_policy) {
  switch (sm_policy) {
    case VGPU_SM_POLICY_FORCE:
      return CorePolicy::kForce;
    case VGPU_SM_POLICY_DISABLE:
      return CorePolicy::kDisable;
    case VGPU_SM_POLICY_MPS:
      return CorePolicy::kMps;
    default:
      return CorePolicy::kDefault;
  }
}

Sharing SharingFromRegion(int32_t sm_sharing) {
  switch (sm_sharing) {
    case VGPU_SM_SHARING_SHARED:
      return Sharing::kShared;
    case VGPU_SM_SHARING_ALONE:
      return Sharing::kAlone;
    default:
      return Sharing::kUnknown;
  }
}

int32_t SharingToRegion(Sharing s) {
  switch (s) {
    case Sharing::kShared:
      return VGPU_SM_SHARING_SHARED;
    case Sharing::kAlone:
      return VGPU_SM_SHARING_ALONE;
    case Sharing::kUnknown:
      break;
  }
  return VGPU_SM_SHARING_UNKNOWN;
}

}  // namespace vgpu::monitor
