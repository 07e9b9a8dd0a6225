// Streams, events and kernel launches on the simulated GPUs (see kernel_queue.h). Launches return
// at once unless their context's queue is full; synchronization sleeps until the simulated
// completion.

#include <algorithm>

#include "driver_state.h"
#include "kernel_queue.h"

using namespace vgpu::fake;

namespace {

bool LiveFunction(CUfunction f) {
  if (f == nullptr) return false;
  for (const auto& [mod, owned] : D().modules) {
    for (const auto& [name, fn] : owned->functions) {
      if (fn.get() == f) return true;
    }
  }
  return false;
}

// One try at a launch: kQueueFull when the context's queue is full.
CUresult TryLaunch(CUfunction f, const unsigned (&grid)[3], const unsigned (&block)[3],
                   CUstream hStream, void** params, bool per_thread, uint32_t* correlation_id) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(hStream, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (!LiveFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || block[0] == 0 || block[1] == 0 ||
      block[2] == 0 || static_cast<uint64_t>(block[0]) * block[1] * block[2] > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (*correlation_id == 0) *correlation_id = NextCorrelationId();
  return EnqueueKernel(s, MakeKernelSpec(grid, block, params), *correlation_id);
}

CUresult Launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, CUstream hStream, void** params, bool per_thread) {
  const unsigned grid[3] = {gx, gy, gz};
  const unsigned block[3] = {bx, by, bz};
  uint32_t correlation_id = 0;
  for (;;) {
    const CUresult rc = TryLaunch(f, grid, block, hStream, params, per_thread, &correlation_id);
    if (rc != kQueueFull) return rc;
    WaitForQueueSpace();  // without the lock: other threads of the process go on
  }
}

CUresult LaunchEx(const CUlaunchConfig* config, CUfunction f, void** params, bool per_thread) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                config->blockDimY, config->blockDimZ, config->hStream, params, per_thread);
}

CUresult StreamSynchronize(CUstream h, bool per_thread) {
  WaitTarget target;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    CUstream_st* s = nullptr;
    if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
    if (s->capture) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    target = StreamTarget(s);
  }
  WaitUntilDone(target);
  return CUDA_SUCCESS;
}

CUresult StreamQuery(CUstream h, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return IsDone(StreamTarget(s)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

// Validation only: within a context kernels already run in submission order, so an event of the
// same context is always behind the stream's next kernel; waits across contexts are not modelled.
CUresult StreamWaitEvent(CUstream h, CUevent e, unsigned flags, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().events, e)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != CU_EVENT_WAIT_DEFAULT && flags != CU_EVENT_WAIT_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult EventRecord(CUevent e, CUstream h, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().events, e)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture) return CUDA_SUCCESS;  // an event node: no timing effect on replay
  RecordEvent(e, s);
  return CUDA_SUCCESS;
}

CUresult BeginCapture(CUstream h, CUstreamCaptureMode mode, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = std::make_unique<CUgraph_st>();
  return CUDA_SUCCESS;
}

CUresult EndCapture(CUstream h, CUgraph* graph, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (graph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!s->capture) return CUDA_ERROR_ILLEGAL_STATE;
  *graph = Adopt(D().graphs, std::move(s->capture));
  return CUDA_SUCCESS;
}

CUresult IsCapturing(CUstream h, CUstreamCaptureStatus* status, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *status = s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult ElapsedTime(float* ms, CUevent start, CUevent end) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!Has(D().events, start) || !Has(D().events, end)) return CUDA_ERROR_INVALID_HANDLE;
  if (((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) != 0)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (!EventComplete(start) || !EventComplete(end)) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(static_cast<double>(end->time_ns - start->time_ns) / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz, unsigned int /*shmem*/,
                        CUstream hStream, void** kernelParams, void** /*extra*/) {
  return Launch(f, gx, gy, gz, bx, by, bz, hStream, kernelParams, false);
}
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz,
                             unsigned int /*shmem*/, CUstream hStream, void** kernelParams,
                             void** /*extra*/) {
  return Launch(f, gx, gy, gz, bx, by, bz, hStream, kernelParams, true);
}
CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** /*extra*/) {
  return LaunchEx(config, f, kernelParams, false);
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** /*extra*/) {
  return LaunchEx(config, f, kernelParams, true);
}
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                   unsigned int bx, unsigned int by, unsigned int bz,
                                   unsigned int /*shmem*/, CUstream hStream, void** kernelParams) {
  return Launch(f, gx, gy, gz, bx, by, bz, hStream, kernelParams, false);
}
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int /*shmem*/, CUstream hStream,
                                        void** kernelParams) {
  return Launch(f, gx, gy, gz, bx, by, bz, hStream, kernelParams, true);
}

CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* ctx = nullptr;
  if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (phStream == nullptr || (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto s = NewStream(ctx);
  s->flags = flags;
  s->priority = std::clamp(priority, -5, 0);  // out-of-range priorities are clamped, as documented
  *phStream = Adopt(D().streams, std::move(s));
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream* phStream, unsigned int flags) {
  return cuStreamCreateWithPriority(phStream, flags, 0);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().streams, hStream)) return CUDA_ERROR_INVALID_HANDLE;
  D().streams.erase(hStream);  // queued work still completes on the GPU
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream hStream) {
  return cuStreamDestroy_v2(hStream);
}

CUresult cuStreamSynchronize(CUstream h) {
  return StreamSynchronize(h, false);
}
CUresult cuStreamSynchronize_ptsz(CUstream h) {
  return StreamSynchronize(h, true);
}
CUresult cuStreamQuery(CUstream h) {
  return StreamQuery(h, false);
}
CUresult cuStreamQuery_ptsz(CUstream h) {
  return StreamQuery(h, true);
}
CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags) {
  return StreamWaitEvent(h, e, flags, false);
}
CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int flags) {
  return StreamWaitEvent(h, e, flags, true);
}
CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  return BeginCapture(h, mode, false);
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) {
  return BeginCapture(h, mode, true);
}
CUresult cuStreamBeginCapture(CUstream h) {
  return BeginCapture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}
CUresult cuStreamBeginCapture_ptsz(CUstream h) {
  return BeginCapture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}
CUresult cuStreamEndCapture(CUstream h, CUgraph* g) {
  return EndCapture(h, g, false);
}
CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph* g) {
  return EndCapture(h, g, true);
}
CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus* st) {
  return IsCapturing(h, st, false);
}
CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus* st) {
  return IsCapturing(h, st, true);
}

CUresult cuEventCreate(CUevent* phEvent, unsigned int flags) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* ctx = nullptr;
  if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  constexpr unsigned kKnown =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (phEvent == nullptr || (flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  auto e = std::make_unique<CUevent_st>();
  e->ctx = ctx;
  e->flags = flags;
  *phEvent = Adopt(D().events, std::move(e));
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream h) {
  return EventRecord(e, h, false);
}
CUresult cuEventRecord_ptsz(CUevent e, CUstream h) {
  return EventRecord(e, h, true);
}

CUresult cuEventQuery(CUevent e) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().events, e)) return CUDA_ERROR_INVALID_HANDLE;
  return EventComplete(e) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent e) {
  WaitTarget target;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (!Has(D().events, e)) return CUDA_ERROR_INVALID_HANDLE;
    target = EventTarget(e);
  }
  WaitUntilDone(target);
  std::lock_guard<std::mutex> lock(D().mu);
  if (Has(D().events, e)) EventComplete(e);  // fixes its timestamp
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return ElapsedTime(ms, start, end);
}
CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  return ElapsedTime(ms, start, end);
}

CUresult cuEventDestroy_v2(CUevent e) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().events, e)) return CUDA_ERROR_INVALID_HANDLE;
  ForgetEvent(e);
  D().events.erase(e);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent e) {
  return cuEventDestroy_v2(e);
}

}  // extern "C"
