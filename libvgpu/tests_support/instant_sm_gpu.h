#pragma once

// A driver for the SM limiter (sm_limit.h) whose GPU finishes everything at once and reports
// 100 ns of GPU time per measured interval, so that a limit never binds and only the limiter's own
// launch path runs: for the launch-path benchmark and the multi-threaded limiter test. Event
// handles are addresses in a static pool, safe to create from several threads.

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sm_limit.h"

namespace vgpu::sm::instant_gpu {

constexpr int kEventPool = 1 << 16;
inline std::atomic<int> g_next_event{0};
inline int g_event_storage[kEventPool];

inline CUresult CtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
inline CUresult StreamIsCapturing(CUstream /*stream*/, CUstreamCaptureStatus* status) {
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
inline CUresult DeviceGetUuid(CUuuid* uuid, CUdevice /*device*/) {
  for (int i = 0; i < 16; ++i) {
    uuid->bytes[i] = static_cast<char>(0x40 + i);
  }
  return CUDA_SUCCESS;
}
inline CUresult EventCreate(CUevent* event, unsigned int /*flags*/) {
  *event = reinterpret_cast<CUevent>(&g_event_storage[g_next_event.fetch_add(1) % kEventPool]);
  return CUDA_SUCCESS;
}
inline CUresult EventRecord(CUevent /*event*/, CUstream /*stream*/) {
  return CUDA_SUCCESS;
}
inline CUresult EventQuery(CUevent /*event*/) {
  return CUDA_SUCCESS;  // everything has run
}
inline CUresult EventElapsed(float* ms, CUevent /*start*/, CUevent /*end*/) {
  *ms = 0.0001F;  // 100 ns of GPU time per interval
  return CUDA_SUCCESS;
}
inline CUresult EventDestroy(CUevent /*event*/) {
  return CUDA_SUCCESS;
}

// Sets the limiter's environment (limit `percent` on device 0, policy force, its peer table and
// budget file in a fresh directory under /tmp) and initialises it with this driver. The limiter
// reads its settings once: call once per process, before any launching thread exists.
inline void InitLimiter(int percent) {
  char dir[] = "/tmp/vgpu-sm-instant-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    std::perror("mkdtemp");
  }
  const std::string limit = std::to_string(percent);
  const std::string region = std::string(dir) + "/region";
  setenv("CUDA_DEVICE_SM_LIMIT", limit.c_str(), 1);              // NOLINT(concurrency-mt-unsafe)
  setenv("GPU_CORE_UTILIZATION_POLICY", "force", 1);             // NOLINT(concurrency-mt-unsafe)
  setenv("VGPU_SM_PEER_DIR", dir, 1);                            // NOLINT(concurrency-mt-unsafe)
  setenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", region.c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  VgpuSmDriver driver{};
  driver.ctx_get_device = CtxGetDevice;
  driver.stream_is_capturing = StreamIsCapturing;
  driver.device_get_uuid = DeviceGetUuid;
  driver.event_create = EventCreate;
  driver.event_record = EventRecord;
  driver.event_query = EventQuery;
  driver.event_elapsed_time = EventElapsed;
  driver.event_destroy = EventDestroy;
  vgpu_sm_init(&driver);
}

}  // namespace vgpu::sm::instant_gpu
