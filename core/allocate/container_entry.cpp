#include "core/allocate/container_entry.h"

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
                     const std::set<std::string>& node_uuids, const std::string& node) {
  if (entry.size() != requested_replicas) {
    return InvalidArgument("kubelet allocated " + std::to_string(requested_replicas) +
                           " vGPU(s) but the scheduler assigned " + std::to_string(entry.size()) +
                           " GPU(s) to this container; the pod's device annotation and its "
                           "resource request disagree");
  }
  std::set<std::string> seen;
  for (const auto& d : entry) {
    if (!node_uuids.contains(d.uuid)) {
      return InvalidArgument("the scheduler assigned GPU " + d.uuid + ", which node " + node +
                             " does not have (stale placement or wrong node)");
    }
    if (!seen.insert(d.uuid).second) {
      return InvalidArgument("GPU " + d.uuid +
                             " appears twice in one container's entry; each vGPU of a container "
                             "must be on a different GPU");
    }
  }
  return Status::Ok();
}

}  // namespace vgpu::allocate
