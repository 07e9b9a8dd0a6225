#include "core/allocate/container_entry.h"

#include <set>

namespace vgpu::allocate {

Result<ContainerView> ContainerForEntry(const PodView& pod, size_t index) {
  if (index >= pod.containers.size()) {
    return InvalidArgument("device list entry " + std::to_string(index) + " of pod " + PodRef(pod) +
                           " has no matching container (the pod has " +
                           std::to_string(pod.containers.size()) +
                           " containers); the scheduler's annotation does not fit this pod spec");
  }
  return pod.containers[index];
}

Status ValidateEntry(const std::vector<GrantedDevice>& entry, size_t requested_replicas,
                     const NodeGpuMemory& node_gpus, const std::string& node) {
  if (entry.size() != requested_replicas) {
    return InvalidArgument("kubelet allocated " + std::to_string(requested_replicas) +
                           " vGPU(s) but the scheduler assigned " + std::to_string(entry.size()) +
                           " GPU(s) to this container; the pod's device annotation and its "
                           "resource request disagree");
  }
  std::set<std::string> seen;
  for (const auto& d : entry) {
    auto gpu = node_gpus.find(d.uuid);
    if (gpu == node_gpus.end()) {
      return InvalidArgument("the scheduler assigned GPU " + d.uuid + ", which node " + node +
                             " does not have (stale placement or wrong node)");
    }
    if (!seen.insert(d.uuid).second) {
      return InvalidArgument("GPU " + d.uuid +
                             " appears twice in one container's entry; each vGPU of a container "
                             "must be on a different GPU");
    }
    if (d.mem_mib < 1 || d.mem_mib > gpu->second) {
      return InvalidArgument(
          "GPU " + d.uuid + " is granted a memory limit of " + std::to_string(d.mem_mib) +
          " MiB; a limit must be 1 to " + std::to_string(gpu->second) +
          " MiB (the GPU's memory as node " + node +
          " registers it); refused rather than handed to libvgpu.so, which reads 0 as "
          "unlimited (a device list written for another card, or changed after the scheduler "
          "wrote it)");
    }
    if (d.cores < 0 || d.cores > 100) {
      return InvalidArgument("GPU " + d.uuid + " is granted " + std::to_string(d.cores) +
                             " % of its cores; a share is 0 to 100");
    }
  }
  return Status::Ok();
}

}  // namespace vgpu::allocate
