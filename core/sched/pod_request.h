#pragma once

// Reads a pod (Kubernetes JSON) into the vGPU ask the fit works on: per-container counts,
// memory and cores after defaults, plus the placement annotations of hami-compat §1.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/base/status.h"
#include "core/sched/types.h"

namespace vgpu::sched {

// Resource names are configurable (device-config.yaml / Helm values); these are HAMi's defaults.
struct ResourceNames {
  std::string count = "nvidia.com/gpu";
  std::string mem = "nvidia.com/gpumem";
  std::string mem_percent = "nvidia.com/gpumem-percentage";
  std::string cores = "nvidia.com/gpucores";
  std::string priority = "nvidia.com/priority";
};

struct RequestDefaults {
  int64_t mem_mib = 0;  // 0 = the whole card
  int cores = 0;
  int gpu_num = 1;  // vGPUs when only memory or cores are asked for
  NodePolicy node_policy = NodePolicy::kBinpack;
  GpuPolicy gpu_policy = GpuPolicy::kSpread;
};

// Pod annotation keys (hami-compat §1).
inline constexpr const char* kAnnoUseGpuType = "nvidia.com/use-gputype";
inline constexpr const char* kAnnoNoUseGpuType = "nvidia.com/nouse-gputype";
inline constexpr const char* kAnnoUseGpuUuid = "nvidia.com/use-gpuuuid";
inline constexpr const char* kAnnoNoUseGpuUuid = "nvidia.com/nouse-gpuuuid";
inline constexpr const char* kAnnoNumaBind = "nvidia.com/numa-bind";
inline constexpr const char* kAnnoNodePolicy = "hami.io/node-scheduler-policy";
inline constexpr const char* kAnnoGpuPolicy = "hami.io/gpu-scheduler-policy";
inline constexpr const char* kAnnoScoringWeights = "hami.io/device-scoring-weights";

// One container's ask read from its resources (limits, then requests), before defaults.
struct RawContainerAsk {
  int64_t count = -1;  // -1 = not given
  int64_t mem_mib = -1;
  int64_t mem_percent = -1;
  int64_t cores = -1;
  int64_t priority = -1;
  bool any() const { return count >= 0 || mem_mib >= 0 || mem_percent >= 0 || cores >= 0; }
};

// Reads one container object ({"resources": {...}}); errors name the container and resource.
Result<RawContainerAsk> ReadContainerAsk(const nlohmann::json& container,
                                         const ResourceNames& names);

// Applies HAMi's defaulting to one container's ask.
ContainerRequest ApplyDefaults(const RawContainerAsk& ask, const RequestDefaults& defaults);

// Reads the whole pod; an error means the pod's spec or annotations are unusable, with a message
// that says which field to fix.
Result<PodRequest> ParsePodRequest(const nlohmann::json& pod, const ResourceNames& names,
                                   const RequestDefaults& defaults);

}  // namespace vgpu::sched
