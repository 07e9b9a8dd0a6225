#pragma once

// Consuming `hami.io/vgpu-devices-to-allocate` one container at a time (hami-compat §3, §4):
// kubelet calls Allocate once per container that asks for GPUs, in spec order (init containers
// first), so each call takes the first non-empty entry (codec::FirstNonEmptyEntry) and leaves an
// empty entry in its place; empty entries keep the entry index equal to the container index.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/allocate/pod_view.h"
#include "core/base/status.h"

namespace vgpu::allocate {

// One GPU granted to a container (decoded from a device list entry).
struct GrantedDevice {
  std::string uuid;
  int64_t mem_mib = 0;
  int64_t cores = 0;
};

// The container that entry `index` belongs to; an error when the pod has fewer containers
// than the device list has entries (the list was written for another pod spec).
Result<ContainerView> ContainerForEntry(const PodView& pod, size_t index);

// This node's GPUs as it registers them for the scheduler: UUID -> memory in MiB (after the
// memory scaling, hami.io/node-nvidia-register's devmem).
using NodeGpuMemory = std::map<std::string, int64_t>;

// Checks an entry against what kubelet asked for and what this node has: the entry's GPU count
// must equal the number of replica IDs kubelet allocated, every GPU must be one of `node_gpus`,
// once, and every memory limit 1 MiB up to that GPU's memory: 0 would reach libvgpu.so as
// CUDA_DEVICE_MEMORY_LIMIT_<i>=0m, which HAMi-core reads as "unlimited". Errors name the GPU or
// the counts so an operator can act.
Status ValidateEntry(const std::vector<GrantedDevice>& entry, size_t requested_replicas,
                     const NodeGpuMemory& node_gpus, const std::string& node);

}  // namespace vgpu::allocate
