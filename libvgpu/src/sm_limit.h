#pragma once

/* The SM (compute) limiter's hook interface for libvgpu.so's launch paths.
 *
 * libvgpu calls vgpu_sm_init() once with the real driver's functions, then brackets every
 * submission (cuLaunchKernel[_ptsz], cuLaunchKernelEx[_ptsz], cuLaunchCooperativeKernel[_ptsz],
 * cuGraphLaunch[_ptsz], ...) with vgpu_sm_before_launch() / vgpu_sm_after_launch(). In a process
 * without any SM limit both are one predictable branch on a cached flag: no clock read, no
 * shared-memory write, no syscall. Design and semantics: docs/sm-limit.md. */

#include <cuda.h>

#include "sm/sm_shared_state.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VgpuSmDriver {
  CUresult (*ctx_get_device)(CUdevice* device);
  /* Optional (NULL: never capturing). Launches into a stream being captured into a graph run
   * nothing, and events must not be recorded or queried there: such launches are left alone.
   * Asked only while a capture reported by vgpu_sm_capture_begun() is active. */
  CUresult (*stream_is_capturing)(CUstream stream, CUstreamCaptureStatus* status);
  CUresult (*device_get_uuid)(CUuuid* uuid, CUdevice device);
  CUresult (*event_create)(CUevent* event, unsigned int flags);
  CUresult (*event_record)(CUevent event, CUstream stream);
  CUresult (*event_query)(CUevent event);
  CUresult (*event_elapsed_time)(float* ms, CUevent start, CUevent end);
  CUresult (*event_destroy)(CUevent event);
} VgpuSmDriver;

/* Reads the environment (CUDA_DEVICE_SM_LIMIT[_i], GPU_CORE_UTILIZATION_POLICY,
 * CUDA_TASK_PRIORITY) and remembers the driver. Call once, after the real driver is resolved and
 * before the first launch hook; cheap (no files, no threads). Safe to call again (no-op). */
void vgpu_sm_init(const VgpuSmDriver* driver);

/* Optional: the container's per-device SM blocks inside the shared region. Without it the
 * limiter maps `<CUDA_DEVICE_MEMORY_SHARED_CACHE>.sm` (default /tmp/cudevshr.cache.sm) on the
 * first limited launch. Call before the first launch. */
void vgpu_sm_use_shared_state(VgpuSmDeviceShared* devices, int count);

/* Optional: where the container's SM state of CUDA device `ordinal` lives (e.g. the reserved SM
 * fields of libvgpu's region): returns 0 and sets *state (budget) and *sharing (the node
 * monitor's VGPU_SM_SHARING_* flag), or -1 to use the side file. Called once per device. */
typedef int (*VgpuSmStateResolver)(int ordinal, VgpuSmDeviceShared** state, int32_t** sharing);
void vgpu_sm_set_state_resolver(VgpuSmStateResolver resolver);

/* Non-zero once vgpu_sm_init found a limit on some device. Read by the inline hooks below. */
extern int vgpu_sm_any_limited;

void vgpu_sm_before_launch_slow(CUstream stream, int per_thread_stream);
void vgpu_sm_after_launch_slow(CUstream stream, int per_thread_stream, CUresult launch_result);

/* Before a submission: waits (in short sleeps, never holding a lock) while the container's
 * GPU-time budget for the current device is spent or this stream has too much unmeasured work
 * queued. `per_thread_stream` is non-zero for the _ptsz/_ptds entry points (stream 0 then means
 * the per-thread default stream). */
static inline void vgpu_sm_before_launch(CUstream stream, int per_thread_stream) {
  if (__builtin_expect(vgpu_sm_any_limited != 0, 0))
    vgpu_sm_before_launch_slow(stream, per_thread_stream);
}

/* After a submission, with the driver's result: records a timing event when it is due. */
static inline void vgpu_sm_after_launch(CUstream stream, int per_thread_stream, CUresult result) {
  if (__builtin_expect(vgpu_sm_any_limited != 0, 0))
    vgpu_sm_after_launch_slow(stream, per_thread_stream, result);
}

void vgpu_sm_before_sync_slow(void);

/* Before the application waits for the GPU (libvgpu's cuStreamSynchronize[_ptsz],
 * cuCtxSynchronize[_v2] and cuEventSynchronize hooks): closes the current device's batches of
 * launches with a timing event, so that work between two synchronisations is measured even when
 * it is too short to have an event of its own. */
static inline void vgpu_sm_before_sync(void) {
  if (__builtin_expect(vgpu_sm_any_limited != 0, 0)) vgpu_sm_before_sync_slow();
}

/* Stream captures: libvgpu's cuStreamBeginCapture* hooks call vgpu_sm_capture_begun() after a
 * capture started, its cuStreamEndCapture hooks vgpu_sm_capture_ended() after one that was active
 * ended. While none is active the launch hooks skip the driver's capture query (a driver call per
 * launch): every way a capture can begin must be reported. */
void vgpu_sm_capture_begun(void);
void vgpu_sm_capture_ended(void);

/* Statistics of the current process's limiter for device `device` (tests, `vgpu top`). */
typedef struct VgpuSmStats {
  int32_t percent; /* effective limit, 0 = unlimited */
  int32_t reserved0;
  uint64_t lease_wait_ns; /* time this process waited for its turn on the GPU (other tenants) */
  uint64_t measured_ns;   /* GPU time measured by this process's events */
  uint64_t charged_ns;    /* GPU time this process charged to the budget */
  uint64_t throttled_ns;  /* time this process's launches waited */
  uint64_t events_recorded;
  uint64_t launches;      /* launches the limiter measured */
  uint64_t queue_wait_ns; /* part of throttled_ns spent waiting for queued work to drain */
  uint64_t budget_waits;  /* launches that waited for budget: one per stretch of work */
  uint64_t fast_launches; /* of `launches`, those that went past the full path (fast window) */
} VgpuSmStats;
int vgpu_sm_get_stats(int device, VgpuSmStats* out);

#ifdef __cplusplus
}  // extern "C"
#endif
