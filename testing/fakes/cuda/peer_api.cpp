// Peer access between the simulated GPUs: capability from the configured topology
// (VGPU_FAKE_TOPOLOGY, PeerCapable), per-context enablement, and peer copies. Copies move no data
// (there is none): they check that each range lies inside one allocation or mapping of its
// context's GPU, and the synchronous form waits for the legacy stream like the other copies.

#include <algorithm>

#include "driver_state.h"
#include "kernel_queue.h"

using namespace vgpu::fake;

extern "C" {
// Per-thread-default-stream variants cuda.h does not declare under __CUDA_API_VERSION_INTERNAL.
FAKE_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                       CUcontext src_ctx, size_t n);
FAKE_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                            CUcontext src_ctx, size_t n, CUstream stream);
}

namespace {

const GpuLink& LinkOf(int physical_a, int physical_b) {
  return D().config.links[static_cast<size_t>(physical_a)][static_cast<size_t>(physical_b)];
}

// The GPU holding [ptr, ptr + bytes) when the range lies inside one allocation or mapping; -1
// otherwise.
int GpuOfRange(CUdeviceptr ptr, size_t bytes) {
  const auto& d = D();
  auto a = d.allocations.upper_bound(ptr);
  if (a != d.allocations.begin()) {
    --a;
    if (ptr + bytes <= a->first + a->second.size) return a->second.physical;
  }
  auto m = d.mappings.upper_bound(ptr);
  if (m != d.mappings.begin()) {
    --m;
    if (ptr + bytes <= m->first + m->second.size) {
      auto h = d.handles.find(m->second.handle);
      return h == d.handles.end() ? -1 : h->second.physical;
    }
  }
  return -1;
}

CUresult PeerCopy(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                  size_t bytes, CUstream stream, bool per_thread, bool synchronous) {
  WaitTarget wait;
  {
    std::lock_guard<std::mutex> lock(D().mu);
    CUctx_st* current = nullptr;
    if (auto rc = CurrentContext(&current); rc != CUDA_SUCCESS) return rc;
    if (!Has(D().contexts, dst_ctx) || !Has(D().contexts, src_ctx)) {
      return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (bytes == 0) return CUDA_SUCCESS;
    if (GpuOfRange(dst, bytes) != dst_ctx->physical ||
        GpuOfRange(src, bytes) != src_ctx->physical) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    CUstream_st* s = nullptr;
    if (auto rc = ResolveStream(synchronous ? nullptr : stream, per_thread, &s);
        rc != CUDA_SUCCESS) {
      return rc;
    }
    if (!synchronous) return CUDA_SUCCESS;
    wait = StreamTarget(s);
  }
  WaitUntilDone(wait);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (auto rc = CheckDevice(peerDev); rc != CUDA_SUCCESS) return rc;
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int a = PhysicalOf(dev);
  const int b = PhysicalOf(peerDev);
  *canAccessPeer = a != b && PeerCapable(LinkOf(a, b)) ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice,
                                 CUdevice dstDevice) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(srcDevice); rc != CUDA_SUCCESS) return rc;
  if (auto rc = CheckDevice(dstDevice); rc != CUDA_SUCCESS) return rc;
  const int a = PhysicalOf(srcDevice);
  const int b = PhysicalOf(dstDevice);
  if (a == b) return CUDA_ERROR_INVALID_DEVICE;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const GpuLink& link = LinkOf(a, b);
  const bool peer = PeerCapable(link);
  switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK:
      *value = !peer ? 0 : link.nvlinks > 0 ? 1 : 2;  // lower is faster; NVLink first
      return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
      *value = peer ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
      *value = link.nvlinks > 0 ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED:
      *value = peer ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED:
      *value = 0;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* current = nullptr;
  if (auto rc = CurrentContext(&current); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().contexts, peerContext) || peerContext == current) return CUDA_ERROR_INVALID_CONTEXT;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (current->physical == peerContext->physical ||
      !PeerCapable(LinkOf(current->physical, peerContext->physical))) {
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  }
  if (!current->peers.insert(peerContext).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* current = nullptr;
  if (auto rc = CurrentContext(&current); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().contexts, peerContext)) return CUDA_ERROR_INVALID_CONTEXT;
  if (current->peers.erase(peerContext) == 0) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                      size_t n) {
  return PeerCopy(dst, dst_ctx, src, src_ctx, n, nullptr, false, true);
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                           size_t n) {
  return PeerCopy(dst, dst_ctx, src, src_ctx, n, nullptr, true, true);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                           size_t n, CUstream stream) {
  return PeerCopy(dst, dst_ctx, src, src_ctx, n, stream, false, false);
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                CUcontext src_ctx, size_t n, CUstream stream) {
  return PeerCopy(dst, dst_ctx, src, src_ctx, n, stream, true, false);
}

}  // extern "C"
