/* Hooks of initialisation, symbol lookup (cuGetProcAddress), the faked memory views, context
 * creation (measured overhead) and the launch paths (SM limiter hook points). */
#include <cuda.h>
#include <stddef.h>

#include "env_config.h"
#include "proc_table.h"
#include "real_driver.h"
#include "sm/launch_limiter.h"
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

/* ---- cuGetProcAddress ----------------------------------------------------------------------- */

static int driver_version(void) {
  static int cached;
  int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (v == 0) {
    typedef CUresult (*version_fn)(int*);
    version_fn fn = REAL(version_fn, cuDriverGetVersion);
    if (fn == NULL || fn(&v) != CUDA_SUCCESS) v = CUDA_VERSION;
    __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
  }
  return v;
}

/* Swaps the driver's pointer for our hook of the same ABI. The driver already answered, so a
 * symbol it lacks stays missing; the version is clamped to the driver's, which cannot hand out an
 * ABI newer than itself. */
static void substitute(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  if (pfn == NULL || *pfn == NULL) return;
  const int dv = driver_version();
  const struct vgpu_proc_entry* e =
      vgpu_proc_select(vgpu_proc_entries, vgpu_proc_entry_count, symbol,
                       cuda_version < dv ? cuda_version : dv, flags);
  if (e != NULL && e->hook != NULL) *pfn = (void*)e->hook;
}

typedef CUresult (*getproc_v1_fn)(const char*, void**, int, cuuint64_t);
HIDDEN CUresult vgpu_hook_cuGetProcAddress_v11030(const char* symbol, void** pfn, int version,
                                                  cuuint64_t flags) {
  getproc_v1_fn real = REAL(getproc_v1_fn, cuGetProcAddress);
  if (real == NULL) return MISSING;
  const CUresult rc = real(symbol, pfn, version, flags);
  if (rc == CUDA_SUCCESS) substitute(symbol, pfn, version, flags);
  return rc;
}

typedef CUresult (*getproc_v2_fn)(const char*, void**, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult*);
HIDDEN CUresult vgpu_hook_cuGetProcAddress_v12000(const char* symbol, void** pfn, int version,
                                                  cuuint64_t flags,
                                                  CUdriverProcAddressQueryResult* status) {
  getproc_v2_fn real = REAL(getproc_v2_fn, cuGetProcAddress_v2);
  if (real == NULL) return MISSING;
  const CUresult rc = real(symbol, pfn, version, flags, status);
  if (rc == CUDA_SUCCESS && (status == NULL || *status == CU_GET_PROC_ADDRESS_SUCCESS)) {
    substitute(symbol, pfn, version, flags);
  }
  return rc;
}

/* ---- faked memory views ------------------------------------------------------------------- */

typedef CUresult (*info_fn)(size_t*, size_t*);
HIDDEN CUresult vgpu_hook_cuMemGetInfo_v3020(size_t* free_bytes, size_t* total_bytes) {
  info_fn real = REAL(info_fn, cuMemGetInfo_v2);
  if (real == NULL) return MISSING;
  size_t real_free = 0;
  size_t real_total = 0;
  const CUresult rc = real(&real_free, &real_total);
  if (rc != CUDA_SUCCESS) return rc;
  const int rdev = vgpu_current_region_dev(NULL);
  if (rdev >= 0) {
    vgpu_ensure_slot();
    vgpu_reconcile(rdev, 0);
    const struct vgpu_region_device* d = &g_vgpu.region.region->devices[rdev];
    const uint64_t used = vgpu_region_device_used(&g_vgpu.region, rdev);
    real_free = (size_t)vgpu_fake_free(d->mem_limit, real_total, real_free, used);
    real_total = (size_t)vgpu_fake_total(d->mem_limit, real_total);
  }
  if (free_bytes != NULL) *free_bytes = real_free;
  if (total_bytes != NULL) *total_bytes = real_total;
  return rc;
}

typedef CUresult (*total_fn)(size_t*, CUdevice);
HIDDEN CUresult vgpu_hook_cuDeviceTotalMem_v3020(size_t* bytes, CUdevice dev) {
  total_fn real = REAL(total_fn, cuDeviceTotalMem_v2);
  if (real == NULL) return MISSING;
  const CUresult rc = real(bytes, dev);
  if (rc != CUDA_SUCCESS || bytes == NULL) return rc;
  const int rdev = vgpu_ordinal_region_dev((int)dev);
  if (rdev >= 0) {
    *bytes = (size_t)vgpu_fake_total(g_vgpu.region.region->devices[rdev].mem_limit, *bytes);
  }
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

/* ---- launches: one limiter call before and after each ------------------------------------- */

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
static CUresult launch(launch_fn real, int per_thread, CUfunction f, unsigned gx, unsigned gy,
                       unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                       CUstream stream, void** params, void** extra) {
  if (real == NULL) return MISSING;
  const struct vgpu_launch l = {VGPU_LAUNCH_KERNEL, stream,       f,         NULL,
                                {gx, gy, gz},       {bx, by, bz}, per_thread};
  CUresult rc = vgpu_limiter_before_launch(&l);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
  vgpu_limiter_after_launch(&l, rc);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuLaunchKernel_v4000(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by, unsigned bz,
                                               unsigned shmem, CUstream s, void** p, void** e) {
  return launch(REAL(launch_fn, cuLaunchKernel), 0, f, gx, gy, gz, bx, by, bz, shmem, s, p, e);
}
HIDDEN CUresult vgpu_hook_cuLaunchKernel_v7000_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                    unsigned gz, unsigned bx, unsigned by,
                                                    unsigned bz, unsigned shmem, CUstream s,
                                                    void** p, void** e) {
  return launch(REAL(launch_fn, cuLaunchKernel_ptsz), 1, f, gx, gy, gz, bx, by, bz, shmem, s, p, e);
}

typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**);
static CUresult launch_coop(coop_fn real, int per_thread, CUfunction f, unsigned gx, unsigned gy,
                            unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                            CUstream stream, void** params) {
  if (real == NULL) return MISSING;
  const struct vgpu_launch l = {
      VGPU_LAUNCH_COOPERATIVE, stream, f, NULL, {gx, gy, gz}, {bx, by, bz}, per_thread};
  CUresult rc = vgpu_limiter_before_launch(&l);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(f, gx, gy, gz, bx, by, bz, shmem, stream, params);
  vgpu_limiter_after_launch(&l, rc);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuLaunchCooperativeKernel_v9000(CUfunction f, unsigned gx, unsigned gy,
                                                          unsigned gz, unsigned bx, unsigned by,
                                                          unsigned bz, unsigned shmem, CUstream s,
                                                          void** p) {
  return launch_coop(REAL(coop_fn, cuLaunchCooperativeKernel), 0, f, gx, gy, gz, bx, by, bz, shmem,
                     s, p);
}
HIDDEN CUresult vgpu_hook_cuLaunchCooperativeKernel_v9000_ptsz(CUfunction f, unsigned gx,
                                                               unsigned gy, unsigned gz,
                                                               unsigned bx, unsigned by,
                                                               unsigned bz, unsigned shmem,
                                                               CUstream s, void** p) {
  return launch_coop(REAL(coop_fn, cuLaunchCooperativeKernel_ptsz), 1, f, gx, gy, gz, bx, by, bz,
                     shmem, s, p);
}

typedef CUresult (*launch_ex_fn)(const CUlaunchConfig*, CUfunction, void**, void**);
static CUresult launch_ex(launch_ex_fn real, int per_thread, const CUlaunchConfig* config,
                          CUfunction f, void** params, void** extra) {
  if (real == NULL) return MISSING;
  struct vgpu_launch l = {VGPU_LAUNCH_KERNEL_EX, NULL, f, NULL, {0, 0, 0}, {0, 0, 0}, per_thread};
  if (config != NULL) {
    l.stream = config->hStream;
    l.grid[0] = config->gridDimX;
    l.grid[1] = config->gridDimY;
    l.grid[2] = config->gridDimZ;
    l.block[0] = config->blockDimX;
    l.block[1] = config->blockDimY;
    l.block[2] = config->blockDimZ;
  }
  CUresult rc = vgpu_limiter_before_launch(&l);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(config, f, params, extra);
  vgpu_limiter_after_launch(&l, rc);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuLaunchKernelEx_v11060(const CUlaunchConfig* c, CUfunction f, void** p,
                                                  void** e) {
  return launch_ex(REAL(launch_ex_fn, cuLaunchKernelEx), 0, c, f, p, e);
}
HIDDEN CUresult vgpu_hook_cuLaunchKernelEx_v11060_ptsz(const CUlaunchConfig* c, CUfunction f,
                                                       void** p, void** e) {
  return launch_ex(REAL(launch_ex_fn, cuLaunchKernelEx_ptsz), 1, c, f, p, e);
}

typedef CUresult (*graph_fn)(CUgraphExec, CUstream);
static CUresult launch_graph(graph_fn real, int per_thread, CUgraphExec graph, CUstream stream) {
  if (real == NULL) return MISSING;
  const struct vgpu_launch l = {VGPU_LAUNCH_GRAPH, stream,    NULL,      graph,
                                {0, 0, 0},         {0, 0, 0}, per_thread};
  CUresult rc = vgpu_limiter_before_launch(&l);
  if (rc != CUDA_SUCCESS) return rc;
  rc = real(graph, stream);
  vgpu_limiter_after_launch(&l, rc);
  return rc;
}
HIDDEN CUresult vgpu_hook_cuGraphLaunch_v10000(CUgraphExec g, CUstream s) {
  return launch_graph(REAL(graph_fn, cuGraphLaunch), 0, g, s);
}
HIDDEN CUresult vgpu_hook_cuGraphLaunch_v10000_ptsz(CUgraphExec g, CUstream s) {
  return launch_graph(REAL(graph_fn, cuGraphLaunch_ptsz), 1, g, s);
}
