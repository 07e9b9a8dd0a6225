// The SM limiter's own per-launch cost: vgpu_sm_before_launch + vgpu_sm_after_launch for a
// process whose limit (99 %, policy force) never binds, against a driver whose calls cost nothing
// (so only the limiter's work is timed: clocks, locks, the lease, the accounting). On a real GPU
// the driver's calls add to this (bench/libvgpu/limited_launch_cost.cu measures those).
//
//   build/release/bench/libvgpu/sm_launch_path_bench
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "sm_limit.h"

namespace {

int g_event_storage[4096];
int g_next_event = 0;

CUresult CtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult StreamIsCapturing(CUstream /*stream*/, CUstreamCaptureStatus* status) {
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
CUresult DeviceGetUuid(CUuuid* uuid, CUdevice /*device*/) {
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0x40 + i);
  return CUDA_SUCCESS;
}
CUresult EventCreate(CUevent* event, unsigned int /*flags*/) {
  *event = reinterpret_cast<CUevent>(&g_event_storage[g_next_event++ % 4096]);
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent /*event*/, CUstream /*stream*/) {
  return CUDA_SUCCESS;
}
CUresult EventQuery(CUevent /*event*/) {
  return CUDA_SUCCESS;
}
CUresult EventElapsed(float* ms, CUevent /*start*/, CUevent /*end*/) {
  *ms = 0.0001F;  // 100 ns of GPU time per interval: the budget never binds
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent /*event*/) {
  return CUDA_SUCCESS;
}

void InitLimiter() {
  static bool done = false;
  if (done) return;
  done = true;
  char dir[] = "/tmp/vgpu-sm-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) std::perror("mkdtemp");
  // The limiter reads its settings from the environment once, at init, before any thread runs.
  setenv("CUDA_DEVICE_SM_LIMIT", "99", 1);            // NOLINT(concurrency-mt-unsafe)
  setenv("GPU_CORE_UTILIZATION_POLICY", "force", 1);  // NOLINT(concurrency-mt-unsafe)
  setenv("VGPU_SM_PEER_DIR", dir, 1);                 // NOLINT(concurrency-mt-unsafe)
  const std::string region = std::string(dir) + "/region";
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

void BM_LimitedLaunchPath(benchmark::State& state) {
  InitLimiter();
  auto* stream = reinterpret_cast<CUstream>(0x1000);
  for (auto _ : state) {
    vgpu_sm_before_launch(stream, 0);
    vgpu_sm_after_launch(stream, 0, CUDA_SUCCESS);
  }
}
BENCHMARK(BM_LimitedLaunchPath)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
