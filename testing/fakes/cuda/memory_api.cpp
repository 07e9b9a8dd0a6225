// Linear device memory: cuMemAlloc and friends, stream-ordered allocation and memory pools.
// Sizes are charged exactly (no rounding), so an allocation of exactly the free memory fits.

#include <algorithm>

#include "driver_state.h"

using namespace vgpu::fake;

namespace {

CUresult AllocateLocked(CUdeviceptr* dptr, uint64_t bytes, int physical, CUctx_st* owner,
                        AllocKind kind, CUmemoryPool pool) {
  if (auto rc = Charge(physical, bytes); rc != CUDA_SUCCESS) return rc;
  const CUdeviceptr base = ReserveAddress(bytes, kAllocAlignment);
  D().allocations[base] = Allocation{bytes, physical, owner, kind, pool};
  *dptr = base;
  return CUDA_SUCCESS;
}

CUresult AllocInCurrent(CUdeviceptr* dptr, uint64_t bytes, AllocKind kind) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* ctx = nullptr;
  if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  return AllocateLocked(dptr, bytes, ctx->physical, ctx, kind, nullptr);
}

CUmemPoolHandle_st* DefaultPool(int ordinal) {
  auto& slot = D().default_pools[static_cast<size_t>(ordinal)];
  if (slot == nullptr) {
    auto pool = std::make_unique<CUmemPoolHandle_st>();
    pool->ordinal = ordinal;
    pool->is_default = true;
    slot = Adopt(D().pools, std::move(pool));
  }
  return slot;
}

CUresult AllocAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream hStream,
                    bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(hStream, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (pool == nullptr) pool = DefaultPool(s->ctx->ordinal);
  if (!Has(D().pools, pool)) return CUDA_ERROR_INVALID_VALUE;
  const int physical = PhysicalOf(pool->ordinal);
  if (s->capture) {  // captured: becomes a memory-allocation node, charged at graph launch
    auto node = std::make_unique<CUgraphNode_st>();
    node->kind = CUgraphNode_st::Kind::kMemAlloc;
    node->bytes = bytes;
    node->physical = physical;
    node->dptr = ReserveAddress(bytes, kAllocAlignment);
    *dptr = node->dptr;
    s->capture->nodes.push_back(std::move(node));
    return CUDA_SUCCESS;
  }
  return AllocateLocked(dptr, bytes, physical, nullptr, AllocKind::kAsync, pool);
}

CUresult FreeAsync(CUdeviceptr dptr, CUstream hStream, bool per_thread) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(hStream, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture) {
    auto node = std::make_unique<CUgraphNode_st>();
    node->kind = CUgraphNode_st::Kind::kMemFree;
    node->dptr = dptr;
    s->capture->nodes.push_back(std::move(node));
    return CUDA_SUCCESS;
  }
  return FreeAllocation(dptr);
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return AllocInCurrent(dptr, bytesize, AllocKind::kDevice);
}

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return AllocInCurrent(dptr, bytesize, AllocKind::kManaged);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
  if (pPitch == nullptr || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t pitch = (WidthInBytes + 511) / 512 * 512;
  CUresult rc = AllocInCurrent(dptr, static_cast<uint64_t>(pitch) * Height, AllocKind::kPitch);
  if (rc == CUDA_SUCCESS) *pPitch = pitch;
  return rc;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  return FreeAllocation(dptr);
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  std::lock_guard<std::mutex> lock(D().mu);
  CUctx_st* ctx = nullptr;
  if (auto rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t t = Gpu(ctx->physical).memory_bytes;
  const uint64_t used = std::min(t, D().shared->DeviceUsed(ctx->physical));
  *total = t;
  *free = t - used;
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto lookup = [&](const auto& ranges, auto size_of) -> bool {
    auto it = ranges.upper_bound(dptr);
    if (it == ranges.begin()) return false;
    --it;
    const uint64_t size = size_of(it->second);
    if (dptr >= it->first + size) return false;
    if (pbase != nullptr) *pbase = it->first;
    if (psize != nullptr) *psize = size;
    return true;
  };
  if (lookup(D().allocations, [](const Allocation& a) { return a.size; })) return CUDA_SUCCESS;
  if (lookup(D().mappings, [](const Mapping& m) { return m.size; })) return CUDA_SUCCESS;
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pool = DefaultPool(dev);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (pool == nullptr || props == nullptr || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (CheckDevice(props->location.id) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_DEVICE;
  auto p = std::make_unique<CUmemPoolHandle_st>();
  p->ordinal = props->location.id;
  *pool = Adopt(D().pools, std::move(p));
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (!Has(D().pools, pool) || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  // Memory still allocated from the pool goes with it.
  for (auto it = D().allocations.begin(); it != D().allocations.end();) {
    if (it->second.pool == pool) {
      Uncharge(it->second.physical, it->second.size);
      it = D().allocations.erase(it);
    } else {
      ++it;
    }
  }
  D().pools.erase(pool);
  return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return AllocAsync(dptr, bytesize, nullptr, hStream, false);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  return AllocAsync(dptr, bytesize, nullptr, hStream, true);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AllocAsync(dptr, bytesize, pool, hStream, false);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream) {
  if (pool == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AllocAsync(dptr, bytesize, pool, hStream, true);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return FreeAsync(dptr, hStream, false);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return FreeAsync(dptr, hStream, true);
}

}  // extern "C"
