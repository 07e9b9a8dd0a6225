/* Hooks of the calls with which an application waits for the GPU. The launch limiter closes its
 * open batch of launches with a timing event first: work between two synchronisations that is
 * too short for an event of its own is then measured, not charged by an estimate. */
#include <cuda.h>
#include <stddef.h>

#include "real_driver.h"
#include "sm/sm_limit.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define MISSING CUDA_ERROR_NOT_FOUND

typedef CUresult (*stream_sync_fn)(CUstream);
HIDDEN CUresult vgpu_hook_cuStreamSynchronize_v2000(CUstream s) {
  stream_sync_fn real = VGPU_REAL_CUDA(stream_sync_fn, cuStreamSynchronize);
  if (real == NULL) return MISSING;
  vgpu_limiter_before_sync();
  CUresult rc = real(s);
  vgpu_limiter_after_sync();
  return rc;
}
HIDDEN CUresult vgpu_hook_cuStreamSynchronize_v7000_ptsz(CUstream s) {
  stream_sync_fn real = VGPU_REAL_CUDA(stream_sync_fn, cuStreamSynchronize_ptsz);
  if (real == NULL) return MISSING;
  vgpu_limiter_before_sync();
  CUresult rc = real(s);
  vgpu_limiter_after_sync();
  return rc;
}

typedef CUresult (*ctx_sync_fn)(void);
HIDDEN CUresult vgpu_hook_cuCtxSynchronize_v2000(void) {
  ctx_sync_fn real = VGPU_REAL_CUDA(ctx_sync_fn, cuCtxSynchronize);
  if (real == NULL) return MISSING;
  vgpu_limiter_before_sync();
  CUresult rc = real();
  vgpu_limiter_after_sync();
  return rc;
}

/* Synchronises `ctx`, which need not be current: the batches closed are the current device's
 * (closing one early costs an event, nothing else). */
typedef CUresult (*ctx_sync_v2_fn)(CUcontext);
HIDDEN CUresult vgpu_hook_cuCtxSynchronize_v13000(CUcontext ctx) {
  ctx_sync_v2_fn real = VGPU_REAL_CUDA(ctx_sync_v2_fn, cuCtxSynchronize_v2);
  if (real == NULL) return MISSING;
  vgpu_limiter_before_sync();
  CUresult rc = real(ctx);
  vgpu_limiter_after_sync();
  return rc;
}

typedef CUresult (*event_sync_fn)(CUevent);
HIDDEN CUresult vgpu_hook_cuEventSynchronize_v2000(CUevent e) {
  event_sync_fn real = VGPU_REAL_CUDA(event_sync_fn, cuEventSynchronize);
  if (real == NULL) return MISSING;
  vgpu_limiter_before_sync();
  CUresult rc = real(e);
  vgpu_limiter_after_sync();
  return rc;
}
