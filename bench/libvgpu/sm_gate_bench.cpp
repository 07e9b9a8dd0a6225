// CPU cost of the SM limiter's launch path (the gate, sm_limit.h's hook points) with a limit that
// does not bind, against a driver whose calls return at once: what libvgpu adds to every launch of
// a limited process, without the driver's own launch cost. Read it from the release preset:
//   cmake --preset release && cmake --build --preset release --target sm_gate_bench
//   build/release/bench/libvgpu/sm_gate_bench
// The measuring thread runs meanwhile, as in a real process.

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "sm_limit.h"

// libvgpu's real_driver.c provides this inside libvgpu.so (its own dlsym is not overridden here).
extern "C" void* vgpu_real_dlsym(void* handle, const char* name) {
  return dlsym(handle, name);
}

namespace {

CUresult CtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult CtxGetCurrent(CUcontext* context) {
  *context = reinterpret_cast<CUcontext>(0x1);
  return CUDA_SUCCESS;
}
CUresult CtxSetCurrent(CUcontext) {
  return CUDA_SUCCESS;
}
CUresult DeviceGetUuid(CUuuid* uuid, CUdevice) {
  memset(uuid, 0x42, sizeof(*uuid));
  return CUDA_SUCCESS;
}
CUresult EventCreate(CUevent* event, unsigned) {
  *event = reinterpret_cast<CUevent>(malloc(8));
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent, CUstream) {
  return CUDA_SUCCESS;
}
CUresult EventQuery(CUevent) {
  return CUDA_SUCCESS;
}
CUresult EventElapsed(float* ms, CUevent, CUevent) {
  *ms = 0.0f;
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent event) {
  free(event);
  return CUDA_SUCCESS;
}

void InitLimiter(int percent) {
  VgpuSmDriver driver{};
  driver.ctx_get_device = CtxGetDevice;
  driver.ctx_get_current = CtxGetCurrent;
  driver.ctx_set_current = CtxSetCurrent;
  driver.device_get_uuid = DeviceGetUuid;
  driver.event_create = EventCreate;
  driver.event_record = EventRecord;
  driver.event_query = EventQuery;
  driver.event_elapsed_time = EventElapsed;
  driver.event_destroy = EventDestroy;
  VgpuSmConfig config{};
  config.device_count = 1;
  config.percent[0] = percent;
  config.policy = 1;  // force
  config.priority = 1;
  config.region_device[0] = -1;  // the process's own budget
  (void)snprintf(config.lock_dir, sizeof(config.lock_dir), "/tmp/vgpu-sm-gate-bench");
  (void)snprintf(config.cupti_library, sizeof(config.cupti_library), "off");
  vgpu_sm_init(&driver, &config);
}

// One launch's hooks on a limited device whose budget never runs out (nothing is charged).
void BM_LimitedLaunchNotBinding(benchmark::State& state) {
  InitLimiter(90);
  const vgpu_launch launch{reinterpret_cast<CUstream>(0x10), 0};
  for (auto _ : state) {
    benchmark::DoNotOptimize(vgpu_limiter_before_launch(&launch));
    vgpu_limiter_after_launch(&launch, CUDA_SUCCESS);
  }
}
BENCHMARK(BM_LimitedLaunchNotBinding);

}  // namespace

BENCHMARK_MAIN();
