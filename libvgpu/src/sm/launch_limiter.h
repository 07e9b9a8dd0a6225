/* Hook points for the SM (compute) limiter (sm/, docs/sm-limit.md), which implements them. Every
 * launch hook of libvgpu calls vgpu_limiter_before_launch() before handing the launch to the driver
 * and vgpu_limiter_after_launch() after it; before_launch may wait (the container's budget is in
 * debt). In a process without an SM limit each is one load and one predictable branch. */
#ifndef VGPU_LAUNCH_LIMITER_H_
#define VGPU_LAUNCH_LIMITER_H_

#include <cuda.h>

enum vgpu_launch_kind {
  VGPU_LAUNCH_KERNEL = 1,      /* cuLaunchKernel[_ptsz] */
  VGPU_LAUNCH_KERNEL_EX = 2,   /* cuLaunchKernelEx[_ptsz] */
  VGPU_LAUNCH_COOPERATIVE = 3, /* cuLaunchCooperativeKernel[_ptsz] */
  VGPU_LAUNCH_GRAPH = 4,       /* cuGraphLaunch[_ptsz] */
};

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_launch {
  enum vgpu_launch_kind kind;
  CUstream stream;
  CUfunction function; /* NULL for graphs */
  CUgraphExec graph;   /* graphs only */
  unsigned grid[3];    /* 0 when unknown (graphs, Ex with attributes) */
  unsigned block[3];
  int per_thread_stream; /* the _ptsz variant was called */
};

/* Returns CUDA_SUCCESS to let the launch proceed, or an error the launch hook returns as is. */
CUresult vgpu_limiter_before_launch(const struct vgpu_launch* launch);
void vgpu_limiter_after_launch(const struct vgpu_launch* launch, CUresult result);

/* A stream capture began / an active one ended (launches into it are recorded into a graph, not
 * run): reported by libvgpu's cuStreamBeginCapture* and cuStreamEndCapture hooks. */
void vgpu_limiter_capture_begun(void);
/* The application is about to wait for the GPU: reported by libvgpu's cuStreamSynchronize*,
 * cuCtxSynchronize* and cuEventSynchronize hooks. */
void vgpu_limiter_before_sync(void);
/* ... and its wait ended (same thread; how long it waited tells a GPU-bound tenant). */
void vgpu_limiter_after_sync(void);
void vgpu_limiter_capture_ended(void);

#ifdef __cplusplus
}
#endif

#endif
