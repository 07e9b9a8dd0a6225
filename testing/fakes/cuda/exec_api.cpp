// Streams, events and kernel launches on the simulated timeline (see driver_state.h). Launches
// return at once; synchronization sleeps until the simulated completion time.

#include <algorithm>

#include "../sim_clock.h"
#include "driver_state.h"

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

CUresult Launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, CUstream hStream, void** params, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(hStream, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (!LiveFunction(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      static_cast<uint64_t>(bx) * by * bz > 1024) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return EnqueueKernel(s, MakeKernelSpec(gx, gy, gz, params));
}

CUresult LaunchEx(const CUlaunchConfig* config, CUfunction f, void** params, bool per_thread) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return Launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                config->blockDimY, config->blockDimZ, config->hStream, params, per_thread);
}

CUresult StreamSynchronize(CUstream h, bool per_thread) {
  int64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    CUstream_st* s = nullptr;
    if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
    if (s->capture) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    until = StreamTail(s);
  }
  SleepUntilNs(until);
  return CUDA_SUCCESS;
}

CUresult StreamQuery(CUstream h, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return NowNs() >= StreamTail(s) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult StreamWaitEvent(CUstream h, CUevent e, unsigned flags, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().events, e)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != CU_EVENT_WAIT_DEFAULT && flags != CU_EVENT_WAIT_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  if (e->recorded) s->tail_ns = std::max(s->tail_ns, e->time_ns);
  return CUDA_SUCCESS;
}

CUresult EventRecord(CUevent e, CUstream h, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().events, e)) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture) return CUDA_SUCCESS;  // an event node: no timing effect on replay
  // The event completes when the stream reaches it: after queued work, or now if idle.
  e->time_ns = std::max(NowNs(), StreamTail(s));
  e->recorded = true;
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
  const int64_t now = NowNs();
  if (start->time_ns > now || end->time_ns > now) return CUDA_ERROR_NOT_READY;
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
  auto s = std::make_unique<CUstream_st>();
  s->ctx = ctx;
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
  D().streams.erase(hStream);  // queued work still completes on the device timeline
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
  return !e->recorded || NowNs() >= e->time_ns ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent e) {
  int64_t until = 0;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (!Has(D().events, e)) return CUDA_ERROR_INVALID_HANDLE;
    until = e->recorded ? e->time_ns : 0;
  }
  SleepUntilNs(until);
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
  D().events.erase(e);
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent e) {
  return cuEventDestroy_v2(e);
}

}  // extern "C"
