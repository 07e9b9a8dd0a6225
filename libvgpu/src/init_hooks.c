/* Hooks of initialisation: cuInit (the process's state is set up once the driver is), and context
 * creation, after which the new context's memory is measured. */
#include <cuda.h>
#include <stddef.h>

#include "real_driver.h"
#include "state.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define REAL(type, name) VGPU_REAL_CUDA(type, name)
#define MISSING CUDA_ERROR_NOT_FOUND

typedef CUresult (*init_fn)(unsigned);
HIDDEN CUresult vgpu_hook_cuInit_v2000(unsigned flags) {
  init_fn real = REAL(init_fn, cuInit);
  if (real == NULL) return CUDA_ERROR_NO_DEVICE;
  const CUresult rc = real(flags);
  if (rc == CUDA_SUCCESS) (void)vgpu_state_cuda();
  return rc;
}

/* ---- contexts: their memory is measured right after creation -------------------------------- */

static void measure_context(CUresult rc, int ordinal) {
  if (rc != CUDA_SUCCESS) return;
  const int rdev = vgpu_ordinal_region_dev(ordinal);
  if (rdev < 0) return;
  vgpu_ensure_slot();
  vgpu_reconcile(rdev, 1);
}

typedef CUresult (*ctx_v2_fn)(CUcontext*, unsigned, CUdevice);
HIDDEN CUresult vgpu_hook_cuCtxCreate_v3020(CUcontext* ctx, unsigned flags, CUdevice dev) {
  ctx_v2_fn real = REAL(ctx_v2_fn, cuCtxCreate_v2);
  if (real == NULL) return MISSING;
  const CUresult rc = real(ctx, flags, dev);
  measure_context(rc, (int)dev);
  return rc;
}

typedef CUresult (*ctx_v3_fn)(CUcontext*, CUexecAffinityParam*, int, unsigned, CUdevice);
HIDDEN CUresult vgpu_hook_cuCtxCreate_v11040(CUcontext* ctx, CUexecAffinityParam* params, int n,
                                             unsigned flags, CUdevice dev) {
  ctx_v3_fn real = REAL(ctx_v3_fn, cuCtxCreate_v3);
  if (real == NULL) return MISSING;
  const CUresult rc = real(ctx, params, n, flags, dev);
  measure_context(rc, (int)dev);
  return rc;
}

typedef CUresult (*ctx_v4_fn)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice);
HIDDEN CUresult vgpu_hook_cuCtxCreate_v12050(CUcontext* ctx, CUctxCreateParams* params,
                                             unsigned flags, CUdevice dev) {
  ctx_v4_fn real = REAL(ctx_v4_fn, cuCtxCreate_v4);
  if (real == NULL) return MISSING;
  const CUresult rc = real(ctx, params, flags, dev);
  measure_context(rc, (int)dev);
  return rc;
}

typedef CUresult (*retain_fn)(CUcontext*, CUdevice);
HIDDEN CUresult vgpu_hook_cuDevicePrimaryCtxRetain_v7000(CUcontext* ctx, CUdevice dev) {
  retain_fn real = REAL(retain_fn, cuDevicePrimaryCtxRetain);
  if (real == NULL) return MISSING;
  const CUresult rc = real(ctx, dev);
  measure_context(rc, (int)dev);
  return rc;
}
