#pragma once

// The pod annotations Allocate reads and writes (hami-compat §3).
// TODO(deviceplugin): switch to core/codec/annotations.h once every key is there.

namespace vgpu::allocate {

inline constexpr const char* kVgpuNode = "hami.io/vgpu-node";
inline constexpr const char* kBindPhase = "hami.io/bind-phase";
inline constexpr const char* kBindTime = "hami.io/bind-time";
inline constexpr const char* kDevicesToAllocate = "hami.io/vgpu-devices-to-allocate";
inline constexpr const char* kDevicesAllocated = "hami.io/vgpu-devices-allocated";
inline constexpr const char* kNodeLock = "hami.io/mutex.lock";
inline constexpr const char* kNodeRegister = "hami.io/node-nvidia-register";

inline constexpr const char* kPhaseAllocating = "allocating";
inline constexpr const char* kPhaseSuccess = "success";
inline constexpr const char* kPhaseFailed = "failed";

}  // namespace vgpu::allocate
