/* Hooks of the launch paths (kernels, cooperative kernels, cuLaunchKernelEx, graphs): one call to
 * the SM limiter before each launch and one after (sm/sm_limit.h). */
#include <cuda.h>
#include <stddef.h>

#include "real_driver.h"
#include "sm/sm_limit.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define REAL(type, name) VGPU_REAL_CUDA(type, name)
#define MISSING CUDA_ERROR_NOT_FOUND

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
static CUresult launch(launch_fn real, int per_thread, CUfunction f, unsigned gx, unsigned gy,
                       unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                       CUstream stream, void** params, void** extra) {
  if (real == NULL) return MISSING;
  const struct vgpu_launch l = {stream, per_thread};
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
  const struct vgpu_launch l = {stream, per_thread};
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
  const struct vgpu_launch l = {config != NULL ? config->hStream : NULL, per_thread};
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
  const struct vgpu_launch l = {stream, per_thread};
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
