#pragma once

// Environment shared by the fake-driver tests: every test process gets its own state directory
// (so parallel ctest runs never share simulated GPUs) and this GPU configuration.

#include <cstdint>
#include <string>

namespace vgpu::fake::test {

inline constexpr uint64_t kMiB = 1ULL << 20;
inline constexpr uint64_t kGpu0Memory = 1024 * kMiB;  // VGPU_FAKE_GPU_MEMORY=1g,2g
inline constexpr uint64_t kGpu1Memory = 2048 * kMiB;
inline constexpr int kGpu0Sms = 132;  // VGPU_FAKE_GPU_SMS=132,66
inline constexpr int kGpu1Sms = 66;
inline constexpr uint64_t kContextMemory = 64 * kMiB;
inline constexpr uint64_t kModuleMemory = 2 * kMiB;

// The directory this process uses as VGPU_FAKE_STATE_DIR.
const std::string& StateDir();

}  // namespace vgpu::fake::test
