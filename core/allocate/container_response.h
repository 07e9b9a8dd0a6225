#pragma once

// The env and mounts of one container's Allocate answer: the contract with libvgpu.so
// (hami-compat §5). Pure: the caller supplies the random cache id.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/allocate/container_entry.h"
#include "core/allocate/mps.h"
#include "core/base/status.h"
#include "core/codec/annotations.h"
#include "vgpu/env_contract.h"

namespace vgpu::allocate {

struct MountSpec {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
  friend bool operator==(const MountSpec&, const MountSpec&) = default;
};

struct ContainerResponse {
  std::map<std::string, std::string> envs;
  std::vector<MountSpec> mounts;
};

struct ResponseSettings {
  std::string hook_path = VGPU_DEFAULT_HOOK_PATH;  // global.gpuHookPath
  std::string libvgpu_version;                     // host file is <hook>/vgpu/libvgpu.so.<version>
  double memory_scaling = 1.0;                     // > 1 means over-subscription
  bool disable_core_limit = false;                 // GPU_CORE_UTILIZATION_POLICY=disable
  std::optional<std::string> log_level;            // LIBCUDA_LOG_LEVEL
  // Whether a container may opt out of enforcement with CUDA_DISABLE_CONTROL=true. HAMi lets any
  // tenant do it; here it is an admin setting, off by default.
  bool allow_disable_control = false;
  // The node's operating mode: hami-core, or mps, where the container becomes a client of its
  // GPU's MPS control daemon under `mps_root` (core/allocate/mps.h, docs/mps.md).
  std::string operating_mode{annotations::kModeHamiCore};
  std::string mps_root{kDefaultMpsRoot};
};

// `cache_id` names the container's shared region file (a fresh uuid4 per container).
// In mps mode the container also gets VGPU_SHARING_MODE=mps, its GPU's pipe directory (mounted
// from the host at MPS's default path), the shared /dev/shm, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
// from its cores and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT from its memory; libvgpu keeps enforcing
// CUDA_DEVICE_MEMORY_LIMIT_<i> exactly and leaves the SMs to MPS. More than one device in mps mode
// is an error (CheckModeGrant says why).
Result<ContainerResponse> BuildContainerResponse(const std::vector<GrantedDevice>& devices,
                                                 const std::string& pod_uid,
                                                 const ContainerView& container,
                                                 const std::string& cache_id,
                                                 const ResponseSettings& settings);

}  // namespace vgpu::allocate
