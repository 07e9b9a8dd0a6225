#pragma once

// Annotation, label and resource names of the HAMi wire contract (docs: hami-compat.md §1–§3).
// They are read and written by HAMi components in the field, so they must never change.

#include <string_view>

namespace vgpu::annotations {

// --- Node annotations (§2) -----------------------------------------------------------------
// GPU inventory written by the device plugin (JSON in HAMi v2.8+, legacy text before).
inline constexpr std::string_view kNodeNvidiaRegister = "hami.io/node-nvidia-register";
// Liveness handshake between scheduler and device plugin: Requesting_/Reported/Deleted_.
inline constexpr std::string_view kNodeHandshake = "hami.io/node-handshake";
// Node lock taken by the scheduler's bind, released by the device plugin's Allocate.
inline constexpr std::string_view kNodeLock = "hami.io/mutex.lock";
// Operator's comma list of GPU UUIDs excluded from new placements.
inline constexpr std::string_view kDeviceCordon = "hami.io/device-cordon";
// NVLink/PCIe pair scores for topology-aware placement.
inline constexpr std::string_view kNodeNvidiaScore = "hami.io/node-nvidia-score";

// --- Pod annotations written by the scheduler (§3) -----------------------------------------
// The device plugin's Allocate trusts them, so the admission webhook refuses pods created with
// any of them (core/sched/control_overrides.h).
inline constexpr std::string_view kVgpuNode = "hami.io/vgpu-node";  // also a label
inline constexpr std::string_view kVgpuTime = "hami.io/vgpu-time";
inline constexpr std::string_view kDevicesAllocated = "hami.io/vgpu-devices-allocated";
inline constexpr std::string_view kDevicesToAllocate = "hami.io/vgpu-devices-to-allocate";
inline constexpr std::string_view kBindPhase = "hami.io/bind-phase";
inline constexpr std::string_view kBindTime = "hami.io/bind-time";

// vgpu's own: set by the scheduler on a pending pod once capacity it was turned away for frees
// up, so that kube-scheduler re-queues it (scheduler/requeue.h).
inline constexpr std::string_view kCapacityFreedAt = "vgpu.io/capacity-freed-at";

// Label that keeps a pod (or, on a namespace, its pods) away from the admission webhook, HAMi's
// opt-out ("ignore"). A pod may be created with it; only vgpu's own accounts may change it later,
// because a pod carrying it before and after an update is never sent to the webhook again.
inline constexpr std::string_view kWebhookSelectorLabel = "hami.io/webhook";

// Values of kBindPhase.
inline constexpr std::string_view kBindPhaseAllocating = "allocating";
inline constexpr std::string_view kBindPhaseSuccess = "success";
inline constexpr std::string_view kBindPhaseFailed = "failed";

// --- Pod annotations set by users to steer placement (§1) ----------------------------------
inline constexpr std::string_view kUseGpuType = "nvidia.com/use-gputype";
inline constexpr std::string_view kNoUseGpuType = "nvidia.com/nouse-gputype";
inline constexpr std::string_view kUseGpuUuid = "nvidia.com/use-gpuuuid";
inline constexpr std::string_view kNoUseGpuUuid = "nvidia.com/nouse-gpuuuid";
inline constexpr std::string_view kNumaBind = "nvidia.com/numa-bind";
inline constexpr std::string_view kVgpuMode = "nvidia.com/vgpu-mode";
inline constexpr std::string_view kNodeSchedulerPolicy = "hami.io/node-scheduler-policy";
inline constexpr std::string_view kGpuSchedulerPolicy = "hami.io/gpu-scheduler-policy";
inline constexpr std::string_view kDeviceScoringWeights = "hami.io/device-scoring-weights";

// Operating modes of a GPU: the inventory's `mode` field (§2), config.json's `operatingmode` and
// the values of kVgpuMode (a pod names the modes it accepts, comma separated). HAMi's words.
inline constexpr std::string_view kModeHamiCore = "hami-core";  // time-sliced, libvgpu limits SMs
inline constexpr std::string_view kModeMig = "mig";
inline constexpr std::string_view kModeMps = "mps";  // clients of the GPU's MPS control daemon

// --- Default resource names (configurable through device-config.yaml) ----------------------
inline constexpr std::string_view kDefaultResourceCount = "nvidia.com/gpu";
inline constexpr std::string_view kDefaultResourceMemory = "nvidia.com/gpumem";
inline constexpr std::string_view kDefaultResourceMemoryPercentage = "nvidia.com/gpumem-percentage";
inline constexpr std::string_view kDefaultResourceCores = "nvidia.com/gpucores";
inline constexpr std::string_view kDefaultResourcePriority = "nvidia.com/priority";

// Vendor word used in the pod device list for NVIDIA GPUs.
inline constexpr std::string_view kVendorNvidia = "NVIDIA";

}  // namespace vgpu::annotations
