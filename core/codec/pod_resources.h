#pragma once

// What each container of a pod asks for, read from the pod's JSON (hami-compat.md §1):
// for every resource the container's `limits` win, then `requests`. Containers are listed init
// containers first, then app containers, in spec order: the same indexing as PodDevices.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/codec/annotations.h"

namespace vgpu::codec {

struct ResourceNames {
  std::string count{annotations::kDefaultResourceCount};
  std::string memory{annotations::kDefaultResourceMemory};
  std::string memory_percentage{annotations::kDefaultResourceMemoryPercentage};
  std::string cores{annotations::kDefaultResourceCores};
  std::string priority{annotations::kDefaultResourcePriority};
};

// Raw asks; defaults (defaultMemory, defaultGPUNum, ...) are applied by policy code, not here.
struct ContainerRequest {
  std::string name;
  bool init = false;
  int32_t count = 0;                  // 0 when the container does not name `count`
  std::optional<int64_t> memory_mib;  // see ParseMemoryMiB
  std::optional<int32_t> memory_percentage;
  std::optional<int32_t> cores;
  std::optional<int32_t> priority;

  bool AsksForGpu() const { return count > 0 || memory_mib || memory_percentage || cores; }
  friend bool operator==(const ContainerRequest&, const ContainerRequest&) = default;
};

// Errors name the container and resource ("container \"main\": nvidia.com/gpumem: ...").
Result<std::vector<ContainerRequest>> ExtractPodRequests(const nlohmann::json& pod,
                                                         const ResourceNames& names = {});

}  // namespace vgpu::codec
