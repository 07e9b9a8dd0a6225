#include "core/monitor/device_use.h"

#include <algorithm>

#include "vgpu/region_layout.h"

namespace vgpu::monitor {

DeviceUse SummarizeDeviceUse(const std::vector<SlotUse>& live, int64_t now_mono_ns,
                             bool single_device) {
  DeviceUse u;
  uint64_t newest_kernel = 0;
  for (const SlotUse& s : live) {
    const uint64_t memory = s.mem_used + s.mem_overhead;
    u.memory_buffer += s.mem_used;
    u.memory_context += s.mem_overhead;
    u.memory_used += memory;
    newest_kernel = std::max(newest_kernel, s.last_kernel_ns);
    const bool recent_kernel =
        s.last_kernel_ns != 0 &&
        now_mono_ns - static_cast<int64_t>(s.last_kernel_ns) < kRecentKernelNs;
    const bool uses = memory > 0 || recent_kernel;
    u.on_gpu = u.on_gpu || uses;
    if (uses || single_device) u.processes.push_back(ProcessView{s.pid, s.host_pid, memory});
  }
  if (newest_kernel != 0) {
    const int64_t ago = now_mono_ns - static_cast<int64_t>(newest_kernel);
    u.last_kernel_seconds_ago = static_cast<double>(std::max<int64_t>(ago, 0)) / 1e9;
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
    case 1:
      return CorePolicy::kForce;
    case 2:
      return CorePolicy::kDisable;
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
