/* Hooks of stream capture: they tell the launch limiter when a capture begins and when an active
 * one ends, so that its launch hooks need not ask the driver on every launch whether the stream is
 * being captured (launches into a capture are recorded into a graph and limited when it runs). */
#include <cuda.h>
#include <stddef.h>

#include "real_driver.h"
#include "sm/sm_limit.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define MISSING CUDA_ERROR_NOT_FOUND

static CUresult begun(CUresult rc) {
  if (rc == CUDA_SUCCESS) {
    vgpu_limiter_capture_begun();
  }
  return rc;
}

typedef CUresult (*begin_v1_fn)(CUstream);
HIDDEN CUresult vgpu_hook_cuStreamBeginCapture_v10000(CUstream s) {
  begin_v1_fn real = VGPU_REAL_CUDA(begin_v1_fn, cuStreamBeginCapture);
  return real == NULL ? MISSING : begun(real(s));
}
HIDDEN CUresult vgpu_hook_cuStreamBeginCapture_v10000_ptsz(CUstream s) {
  begin_v1_fn real = VGPU_REAL_CUDA(begin_v1_fn, cuStreamBeginCapture_ptsz);
  return real == NULL ? MISSING : begun(real(s));
}

typedef CUresult (*begin_v2_fn)(CUstream, CUstreamCaptureMode);
HIDDEN CUresult vgpu_hook_cuStreamBeginCapture_v10010(CUstream s, CUstreamCaptureMode mode) {
  begin_v2_fn real = VGPU_REAL_CUDA(begin_v2_fn, cuStreamBeginCapture_v2);
  return real == NULL ? MISSING : begun(real(s, mode));
}
HIDDEN CUresult vgpu_hook_cuStreamBeginCapture_v10010_ptsz(CUstream s, CUstreamCaptureMode mode) {
  begin_v2_fn real = VGPU_REAL_CUDA(begin_v2_fn, cuStreamBeginCapture_v2_ptsz);
  return real == NULL ? MISSING : begun(real(s, mode));
}

typedef CUresult (*begin_to_graph_fn)(CUstream, CUgraph, const CUgraphNode*, const CUgraphEdgeData*,
                                      size_t, CUstreamCaptureMode);
HIDDEN CUresult vgpu_hook_cuStreamBeginCaptureToGraph_v12030(CUstream s, CUgraph g,
                                                             const CUgraphNode* deps,
                                                             const CUgraphEdgeData* edges, size_t n,
                                                             CUstreamCaptureMode mode) {
  begin_to_graph_fn real = VGPU_REAL_CUDA(begin_to_graph_fn, cuStreamBeginCaptureToGraph);
  return real == NULL ? MISSING : begun(real(s, g, deps, edges, n, mode));
}
HIDDEN CUresult vgpu_hook_cuStreamBeginCaptureToGraph_v12030_ptsz(CUstream s, CUgraph g,
                                                                  const CUgraphNode* deps,
                                                                  const CUgraphEdgeData* edges,
                                                                  size_t n,
                                                                  CUstreamCaptureMode mode) {
  begin_to_graph_fn real = VGPU_REAL_CUDA(begin_to_graph_fn, cuStreamBeginCaptureToGraph_ptsz);
  return real == NULL ? MISSING : begun(real(s, g, deps, edges, n, mode));
}

/* cuStreamEndCapture ends the capture whatever it returns (an invalidated capture ends with an
 * error), and fails without ending anything on a stream that is not capturing: ask first. */
typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus*);
typedef CUresult (*end_fn)(CUstream, CUgraph*);
static CUresult end_capture(end_fn real, is_capturing_fn query, CUstream s, CUgraph* graph) {
  if (real == NULL) {
    return MISSING;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  const int active =
      query == NULL || query(s, &status) != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult rc = real(s, graph);
  if (active) {
    vgpu_limiter_capture_ended();
  }
  return rc;
}
HIDDEN CUresult vgpu_hook_cuStreamEndCapture_v10000(CUstream s, CUgraph* graph) {
  return end_capture(VGPU_REAL_CUDA(end_fn, cuStreamEndCapture),
                     VGPU_REAL_CUDA(is_capturing_fn, cuStreamIsCapturing), s, graph);
}
HIDDEN CUresult vgpu_hook_cuStreamEndCapture_v10000_ptsz(CUstream s, CUgraph* graph) {
  return end_capture(VGPU_REAL_CUDA(end_fn, cuStreamEndCapture_ptsz),
                     VGPU_REAL_CUDA(is_capturing_fn, cuStreamIsCapturing_ptsz), s, graph);
}
