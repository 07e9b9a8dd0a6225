#pragma once

// Reads a pod (Kubernetes JSON) into the vGPU ask the fit works on: per-container counts,
// memory and cores after defaults, plus the placement annotations of hami-compat §1.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "core/base/status.h"
#include "core/codec/pod_resources.h"
#include "core/sched/types.h"

namespace vgpu::sched {

// Resource names are configurable (device-config.yaml / Helm values); defaults are HAMi's.
using ResourceNames = codec::ResourceNames;

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
inline constexpr const char* kAnnoVgpuMode = "nvidia.com/vgpu-mode";
inline constexpr const char* kAnnoNodePolicy = "hami.io/node-scheduler-policy";
inline constexpr const char* kAnnoGpuPolicy = "hami.io/gpu-scheduler-policy";
inline constexpr const char* kAnnoScoringWeights = "hami.io/device-scoring-weights";

// Applies HAMi's defaulting to one container's raw ask (read by codec::ExtractPodRequests).
ContainerRequest ApplyDefaults(const codec::ContainerRequest& ask, const RequestDefaults& defaults);

// Reads the whole pod; an error means the pod's spec or annotations are unusable, with a message
// that says which field to fix.
Result<PodRequest> ParsePodRequest(const nlohmann::json& pod, const ResourceNames& names,
                                   const RequestDefaults& defaults);

}  // namespace vgpu::sched
