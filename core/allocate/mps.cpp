#include "core/allocate/mps.h"

#include <algorithm>

#include "core/base/strings.h"
#include "core/codec/annotations.h"

namespace vgpu::allocate {

Result<MpsDirs> MpsDirsFor(std::string_view root, std::string_view gpu_uuid) {
  if (root.empty() || root.front() != '/') {
    return InvalidArgument("MPS directory \"" + std::string(root) + "\" must be an absolute path");
  }
  if (gpu_uuid.empty() || gpu_uuid == "." || gpu_uuid == ".." ||
      gpu_uuid.find('/') != std::string_view::npos) {
    return InvalidArgument("GPU UUID \"" + std::string(gpu_uuid) +
                           "\" cannot name an MPS directory");
  }
  std::string base(root);
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  if (base == "/") base.clear();
  MpsDirs d;
  d.gpu = base + "/" + std::string(gpu_uuid);
  d.pipe = d.gpu + "/pipe";
  d.log = d.gpu + "/log";
  d.shm = base + "/shm";
  return d;
}

int ActiveThreadPercentage(int64_t cores) {
  if (cores <= 0 || cores >= 100) return 100;
  return static_cast<int>(cores);
}

std::string PinnedDeviceMemLimit(const std::vector<GrantedDevice>& devices) {
  std::string out;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(i) + "=" + std::to_string(devices[i].mem_mib) + "M";
  }
  return out;
}

Status CheckModeGrant(const PodView& pod, std::string_view node_mode,
                      const std::vector<GrantedDevice>& devices, const std::string& container) {
  auto it = pod.annotations.find(std::string(annotations::kVgpuMode));
  if (it != pod.annotations.end() && !TrimSpace(it->second).empty()) {
    bool named = false;
    for (std::string_view word : Split(it->second, ',')) {
      if (TrimSpace(word) == node_mode) named = true;
    }
    if (!named) {
      return FailedPrecondition("pod asks " + std::string(annotations::kVgpuMode) + "=" +
                                it->second + " but this node runs its GPUs in mode " +
                                std::string(node_mode) +
                                "; the scheduler places such pods elsewhere (was the pod's "
                                "device annotation written by hand?)");
    }
  }
  if (node_mode == annotations::kModeMps && devices.size() > 1) {
    return FailedPrecondition(
        "container " + container + " was granted " + std::to_string(devices.size()) +
        " GPUs on an MPS node; an MPS client reaches one control daemon and each serves one "
        "GPU, so MPS containers take one vGPU (ask nvidia.com/gpu: 1, or run on a hami-core node)");
  }
  return Status::Ok();
}

}  // namespace vgpu::allocate
