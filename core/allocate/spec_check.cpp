#include "core/allocate/spec_check.h"

#include "core/sched/fit.h"

namespace vgpu::allocate {

Status CheckEntryAgainstSpec(const std::vector<GrantedDevice>& entry, const PodView& pod,
                             const ContainerView& container, const sched::RequestDefaults& defaults,
                             const NodeGpuMemory& node_gpus) {
  const std::string who = "container " + container.name + " of pod " + PodRef(pod);
  const std::string refused =
      "; refused: the device list (hami.io/vgpu-devices-to-allocate) was changed after the "
      "scheduler wrote it, or the scheduler and this device plugin read device-config.yaml "
      "differently";
  if (!pod.resources_error.empty()) {
    return InvalidArgument("the vGPU resources of pod " + PodRef(pod) +
                           " cannot be read: " + pod.resources_error);
  }
  const sched::ContainerRequest ask = sched::ApplyDefaults(container.ask, defaults);
  if (static_cast<size_t>(ask.count) != entry.size()) {
    return InvalidArgument(who + " asks for " + std::to_string(ask.count) +
                           " vGPU(s) in its spec, but its device list entry grants " +
                           std::to_string(entry.size()) + refused);
  }
  for (const GrantedDevice& d : entry) {
    auto gpu = node_gpus.find(d.uuid);
    if (gpu == node_gpus.end()) {
      return InvalidArgument(who + ": GPU " + d.uuid + " is not one of this node's");
    }
    sched::GpuDevice registered;
    registered.uuid = d.uuid;
    registered.mem_mib = gpu->second;
    const int64_t asked_mib = sched::MemoryNeeded(ask, registered);
    if (d.mem_mib > asked_mib) {
      std::string why = who + " asks for " + std::to_string(asked_mib) + " MiB on GPU " + d.uuid;
      why += " (from its spec and the defaults), but is granted ";
      why += std::to_string(d.mem_mib) + " MiB";
      return InvalidArgument(why + refused);
    }
    // 0 % is no compute limit at all: looser than any share. A share at or below the ask holds.
    const bool looser = ask.cores > 0 && (d.cores == 0 || d.cores > ask.cores);
    if (looser) {
      std::string why = who + " asks for " + std::to_string(ask.cores) + " % of GPU " + d.uuid;
      why += "'s cores, but is granted ";
      why += d.cores == 0 ? std::string("no compute limit (0)") : std::to_string(d.cores) + " %";
      return InvalidArgument(why + refused);
    }
  }
  return Status::Ok();
}

}  // namespace vgpu::allocate
