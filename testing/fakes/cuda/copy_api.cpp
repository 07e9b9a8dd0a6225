// Copies and memsets. No data exists on a simulated GPU: the calls check that the device range
// lies inside one allocation or mapping, device-to-host copies write zeros, and the synchronous
// forms wait for the legacy stream like the real driver.

#include <cstring>

#include "driver_state.h"
#include "kernel_queue.h"

using namespace vgpu::fake;

extern "C" {
// Per-thread-default-stream variants cuda.h does not declare.
FAKE_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t n);
FAKE_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t n);
FAKE_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t n,
                                               CUstream s);
FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t n, CUstream s);
FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                               CUstream s);
FAKE_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char value, size_t n);
FAKE_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int value, size_t n);
}

namespace {

bool InsideOneRange(CUdeviceptr ptr, size_t bytes) {
  auto inside = [&](const auto& ranges, auto size_of) {
    auto it = ranges.upper_bound(ptr);
    if (it == ranges.begin()) return false;
    --it;
    return ptr + bytes <= it->first + size_of(it->second);
  };
  return inside(D().allocations, [](const Allocation& a) { return a.size; }) ||
         inside(D().mappings, [](const Mapping& m) { return m.size; });
}

// Validates the device ranges; `wait` gets what a synchronous call must wait for.
CUresult Check(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream, bool per_thread,
               bool synchronous, WaitTarget* wait) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* ctx = nullptr;
  if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (bytes == 0) return CUDA_SUCCESS;
  if ((dst != 0 && !InsideOneRange(dst, bytes)) || (src != 0 && !InsideOneRange(src, bytes))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(synchronous ? nullptr : stream, per_thread, &s); rc != CUDA_SUCCESS) {
    return rc;
  }
  if (synchronous) *wait = StreamTarget(s);
  return CUDA_SUCCESS;
}

CUresult Copy(void* host_dst, CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream,
              bool per_thread, bool synchronous) {
  WaitTarget wait;
  CUresult rc = Check(dst, src, bytes, stream, per_thread, synchronous, &wait);
  if (rc != CUDA_SUCCESS) return rc;
  WaitUntilDone(wait);
  if (host_dst != nullptr) std::memset(host_dst, 0, bytes);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  if (src == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  return Copy(nullptr, dst, 0, n, nullptr, false, true);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void* src, size_t n) {
  if (src == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  return Copy(nullptr, dst, 0, n, nullptr, true, true);
}
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  if (dst == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  return Copy(dst, 0, src, n, nullptr, false, true);
}
CUresult cuMemcpyDtoH_v2_ptds(void* dst, CUdeviceptr src, size_t n) {
  if (dst == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  return Copy(dst, 0, src, n, nullptr, true, true);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return Copy(nullptr, dst, src, n, nullptr, false, true);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return Copy(nullptr, dst, src, n, nullptr, true, true);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  if (src == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  return Copy(nullptr, dst, 0, n, s, false, false);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  if (src == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  return Copy(nullptr, dst, 0, n, s, true, false);
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  if (dst == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  return Copy(dst, 0, src, n, s, false, false);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  if (dst == nullptr && n != 0) return CUDA_ERROR_INVALID_VALUE;
  return Copy(dst, 0, src, n, s, true, false);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return Copy(nullptr, dst, src, n, s, false, false);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  return Copy(nullptr, dst, src, n, s, true, false);
}
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char /*value*/, size_t n) {
  return Copy(nullptr, dst, 0, n, nullptr, false, true);
}
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char /*value*/, size_t n) {
  return Copy(nullptr, dst, 0, n, nullptr, true, true);
}
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int /*value*/, size_t n) {
  return Copy(nullptr, dst, 0, n * 4, nullptr, false, true);
}
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned int /*value*/, size_t n) {
  return Copy(nullptr, dst, 0, n * 4, nullptr, true, true);
}

}  // extern "C"
