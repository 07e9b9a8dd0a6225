/* Hooks of initialisation: cuInit (the process's state is set up once the driver is), and context
 * creation, admitted against the limit like an allocation and measured right after. */
#include <cuda.h>
#include <stddef.h>

#include "admission.h"
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

/* ---- contexts: admitted like allocations, measured right after creation ------------------- */

typedef CUresult (*ctx_destroy_fn)(CUcontext);

/* After a cuCtxCreate variant: measures the new context; one that took the device over its limit
 * is destroyed again and the call fails as on a full card. */
static CUresult created(struct vgpu_context_admission* a, CUresult rc, CUcontext* ctx) {
  rc = vgpu_context_created(a, rc);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY && ctx != NULL && *ctx != NULL) {
    ctx_destroy_fn destroy = REAL(ctx_destroy_fn, cuCtxDestroy_v2);
    if (destroy != NULL) (void)destroy(*ctx);
    *ctx = NULL;
    vgpu_context_undone(a);
  }
  return rc;
}

typedef CUresult (*ctx_v2_fn)(CUcontext*, unsigned, CUdevice);
HIDDEN CUresult vgpu_hook_cuCtxCreate_v3020(CUcontext* ctx, unsigned flags, CUdevice dev) {
  ctx_v2_fn real = REAL(ctx_v2_fn, cuCtxCreate_v2);
  if (real == NULL) return MISSING;
  struct vgpu_context_admission a;
  const CUresult admitted = vgpu_admit_context(&a, (int)dev);
  if (admitted != CUDA_SUCCESS) return admitted;
  return created(&a, real(ctx, flags, dev), ctx);
}

typedef CUresult (*ctx_v3_fn)(CUcontext*, CUexecAffinityParam*, int, unsigned, CUdevice);
HIDDEN CUresult vgpu_hook_cuCtxCreate_v11040(CUcontext* ctx, CUexecAffinityParam* params, int n,
                                             unsigned flags, CUdevice dev) {
  ctx_v3_fn real = REAL(ctx_v3_fn, cuCtxCreate_v3);
  if (real == NULL) return MISSING;
  struct vgpu_context_admission a;
  const CUresult admitted = vgpu_admit_context(&a, (int)dev);
  if (admitted != CUDA_SUCCESS) return admitted;
  return created(&a, real(ctx, params, n, flags, dev), ctx);
}

typedef CUresult (*ctx_v4_fn)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice);
HIDDEN CUresult vgpu_hook_cuCtxCreate_v12050(CUcontext* ctx, CUctxCreateParams* params,
                                             unsigned flags, CUdevice dev) {
  ctx_v4_fn real = REAL(ctx_v4_fn, cuCtxCreate_v4);
  if (real == NULL) return MISSING;
  struct vgpu_context_admission a;
  const CUresult admitted = vgpu_admit_context(&a, (int)dev);
  if (admitted != CUDA_SUCCESS) return admitted;
  return created(&a, real(ctx, params, flags, dev), ctx);
}

/* 1 when the primary context of `dev` exists (retaining it creates nothing). */
static int primary_active(CUdevice dev) {
  typedef CUresult (*state_fn)(CUdevice, unsigned*, int*);
  state_fn get_state = REAL(state_fn, cuDevicePrimaryCtxGetState);
  unsigned flags = 0;
  int active = 0;
  return get_state != NULL && get_state(dev, &flags, &active) == CUDA_SUCCESS && active;
}

typedef CUresult (*retain_fn)(CUcontext*, CUdevice);
HIDDEN CUresult vgpu_hook_cuDevicePrimaryCtxRetain_v7000(CUcontext* ctx, CUdevice dev) {
  retain_fn real = REAL(retain_fn, cuDevicePrimaryCtxRetain);
  if (real == NULL) return MISSING;
  if (vgpu_state_cuda() == 0 && primary_active(dev)) return real(ctx, dev);
  struct vgpu_context_admission a;
  const CUresult admitted = vgpu_admit_context(&a, (int)dev);
  if (admitted != CUDA_SUCCESS) return admitted;
  CUresult rc = vgpu_context_created(&a, real(ctx, dev));
  if (rc == CUDA_ERROR_OUT_OF_MEMORY && ctx != NULL && *ctx != NULL) {
    typedef CUresult (*release_fn)(CUdevice);
    release_fn release = REAL(release_fn, cuDevicePrimaryCtxRelease_v2);
    if (release == NULL) release = REAL(release_fn, cuDevicePrimaryCtxRelease);
    if (release != NULL) (void)release(dev);
    *ctx = NULL;
    vgpu_context_undone(&a);
  }
  return rc;
}
