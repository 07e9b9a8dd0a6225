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
#include <vector>

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

// An application runs its own code between launches (a Python interpreter: several microseconds
// and a working set far larger than L1), so the limiter's state is rarely still in cache when the
// next launch comes. These two touch `KB` of other memory between launches; the limiter's cost
// with cold caches is the difference between them.
std::vector<char>& Pollution() {
  static std::vector<char> buffer(std::size_t{8} << 20);
  return buffer;
}
void Pollute(std::size_t bytes) {
  std::vector<char>& b = Pollution();
  static std::size_t offset = 0;
  for (std::size_t i = 0; i < bytes; i += 64) {
    b[offset] = static_cast<char>(b[offset] + 1);
    offset = (offset + 64) % b.size();
  }
}
void BM_PolluteOnly(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 10;
  for (auto _ : state) {
    Pollute(bytes);
    benchmark::ClobberMemory();
  }
}
void BM_LimitedLaunchPathColdCaches(benchmark::State& state) {
  InitLimiter();
  auto* stream = reinterpret_cast<CUstream>(0x1000);
  const auto bytes = static_cast<std::size_t>(state.range(0)) << 10;
  for (auto _ : state) {
    Pollute(bytes);
    benchmark::ClobberMemory();
    vgpu_sm_before_launch(stream, 0);
    vgpu_sm_after_launch(stream, 0, CUDA_SUCCESS);
  }
}
BENCHMARK(BM_PolluteOnly)->Arg(256)->Arg(2048)->MinTime(1.0);
BENCHMARK(BM_LimitedLaunchPathColdCaches)->Arg(256)->Arg(2048)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
