#pragma once

// Whether each container is alone on each of its GPUs: the flag libvgpu reads under
// GPU_CORE_UTILIZATION_POLICY=default (alone: its SM limit is lifted; shared: it holds).
//
// Only containers *using* a GPU count: one is on a GPU while a live process of it holds memory
// there or ran a kernel there recently (ContainerOnGpu in device_use.h). A container that
// registered the GPU but sits idle makes nobody shared. Per claim:
//   - a container on the GPU is ALONE when it is the only user, SHARED when anyone else is on it;
//   - an idle container is ALONE when nobody is on the GPU (if it starts it is alone, until the
//     next tick says otherwise), SHARED when someone is (if it starts it shares: it starts limited
//     instead of unlimited for a tick).
// Processes on the GPU that belong to no container's region (a process whose libvgpu runs with a
// private region, a pod without libvgpu) are users too: they make everyone on that GPU shared.

#include <map>
#include <string>
#include <vector>

#include "core/monitor/snapshot.h"

namespace vgpu::monitor {

struct GpuClaim {
  std::string container;  // key of the container (its directory name)
  std::string uuid;       // a GPU with a device record in the container's region
  bool on_gpu = false;    // the container uses it now
};

// The decision per claim, in the order of `claims`. Several claims of one container on one GPU
// (several regions of one container) count as one user, on the GPU if any of them is.
// `outside_users`: per GPU UUID, processes using it that belong to no container.
std::vector<Sharing> DecideSharing(const std::vector<GpuClaim>& claims,
                                   const std::map<std::string, int>& outside_users);

}  // namespace vgpu::monitor
