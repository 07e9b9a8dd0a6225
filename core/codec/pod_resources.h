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

// The largest vGPU count and memory a container may ask for: more than any node or GPU has, so
// a larger value is a mistake or an attack (sums and products of them must not overflow int64).
inline constexpr int32_t kMaxGpuCount = 1024;
inline constexpr int64_t kMaxMemoryMiB = 2147483647;  // HAMi's int32 MiB: 2 PiB

// Raw asks; defaults (defaultMemory, defaultGPUNum, ...) are applied by policy code, not here.
// Every value is a whole number in range (ExtractPodRequests refuses others).
struct ContainerRequest {
  std::string name;
  bool init = false;
  int32_t count = 0;                  // 0 when the container does not name `count` or names 0
  bool count_given = false;           // the container names `count` (an explicit 0 asks for no GPU)
  std::optional<int64_t> memory_mib;  // see ParseMemoryMiB; 0 = unset (HAMi's reading)
  std::optional<int32_t> memory_percentage;  // 0..100; 0 = unset (HAMi's reading)
  std::optional<int32_t> cores;              // 0..100; 0 = no compute limit
  std::optional<int32_t> priority;           // 0 or 1

  // HAMi's reading: `count` decides when the container names it (an explicit 0 asks for no GPU,
  // whatever else it names); otherwise memory or cores ask for defaultGPUNum vGPUs.
  bool AsksForGpu() const {
    if (count_given) return count > 0;
    return memory_mib || memory_percentage || cores;
  }
  friend bool operator==(const ContainerRequest&, const ContainerRequest&) = default;
};

// Errors name the container and resource ("container \"main\": nvidia.com/gpumem: ..."): a
// value that is not a whole number, negative, above its maximum (count kMaxGpuCount, memory
// kMaxMemoryMiB, percentages and cores 100, priority 1), or given in both `limits` and
// `requests` with different values (Kubernetes requires them equal for extended resources).
Result<std::vector<ContainerRequest>> ExtractPodRequests(const nlohmann::json& pod,
                                                         const ResourceNames& names = {});

}  // namespace vgpu::codec
