// Unified-memory hints: cuMemAdvise (CUDA 8 ABI, device ordinal) and cuMemAdvise_v2 (12.2,
// CUmemLocation), cuMemPrefetchAsync (8.0) and cuMemPrefetchAsync_v2 (12.2), each prefetch also
// as _ptsz, and cuMemRangeGetAttribute to read the hints back. Nothing moves: the hints are
// recorded on the managed allocation so that tests can tell which entry point (and ABI) ran.

#include "driver_state.h"

using namespace vgpu::fake;

namespace {

// The managed allocation holding [ptr, ptr + count), or null.
Allocation* ManagedRange(CUdeviceptr ptr, size_t count) {
  auto& allocations = D().allocations;
  auto it = allocations.upper_bound(ptr);
  if (count == 0 || it == allocations.begin()) return nullptr;
  --it;
  Allocation& a = it->second;
  if (a.kind != AllocKind::kManaged || ptr - it->first > a.size ||
      count > a.size - (ptr - it->first)) {
    return nullptr;
  }
  return &a;
}

// CUDA 8 ABIs name a location by device ordinal or CU_DEVICE_CPU.
CUresult LocationOfDevice(CUdevice dev, CUmemLocation* out) {
  if (dev == CU_DEVICE_CPU) {
    *out = {CU_MEM_LOCATION_TYPE_HOST, 0};
    return CUDA_SUCCESS;
  }
  if (auto rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  *out = {CU_MEM_LOCATION_TYPE_DEVICE, dev};
  return CUDA_SUCCESS;
}

CUresult CheckLocation(const CUmemLocation& loc) {
  switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return CheckDevice(loc.id);
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return loc.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;  // one NUMA node
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// The CUDA 8 view of a location: ordinal, CU_DEVICE_CPU, or CU_DEVICE_INVALID when unset.
int LegacyDevice(const CUmemLocation& loc) {
  switch (loc.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      return loc.id;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return CU_DEVICE_CPU;
    default:
      return CU_DEVICE_INVALID;
  }
}

CUresult Advise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation loc) {
  if (auto rc = CheckLocation(loc); rc != CUDA_SUCCESS) return rc;
  Allocation* a = ManagedRange(ptr, count);
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (advice) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
      a->read_mostly = advice == CU_MEM_ADVISE_SET_READ_MOSTLY;
      return CUDA_SUCCESS;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
      a->preferred = loc;
      return CUDA_SUCCESS;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
      a->preferred = {CU_MEM_LOCATION_TYPE_INVALID, 0};
      return CUDA_SUCCESS;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
      return CUDA_SUCCESS;  // not modelled
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult Prefetch(CUdeviceptr ptr, size_t count, CUmemLocation loc, unsigned flags, CUstream stream,
                  bool per_thread) {
  CUstream_st* s = nullptr;
  if (auto rc = ResolveStream(stream, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (auto rc = CheckLocation(loc); rc != CUDA_SUCCESS) return rc;
  Allocation* a = ManagedRange(ptr, count);
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  a->last_prefetch = loc;
  return CUDA_SUCCESS;
}

CUresult PrefetchLegacy(CUdeviceptr ptr, size_t count, CUdevice dst, CUstream stream,
                        bool per_thread) {
  CUmemLocation loc{};
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (auto rc = LocationOfDevice(dst, &loc); rc != CUDA_SUCCESS) return rc;
  return Prefetch(ptr, count, loc, 0, stream, per_thread);
}

}  // namespace

extern "C" {

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  CUmemLocation loc{};
  if (auto rc = LocationOfDevice(device, &loc); rc != CUDA_SUCCESS) return rc;
  return Advise(devPtr, count, advice, loc);
}

CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                        CUmemLocation location) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  return Advise(devPtr, count, advice, location);
}

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                            CUstream hStream) {
  std::lock_guard<std::mutex> lock(D().mu);
  return PrefetchLegacy(devPtr, count, dstDevice, hStream, false);
}

CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                 CUstream hStream) {
  std::lock_guard<std::mutex> lock(D().mu);
  return PrefetchLegacy(devPtr, count, dstDevice, hStream, true);
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                               unsigned int flags, CUstream hStream) {
  std::lock_guard<std::mutex> lock(D().mu);
  return Prefetch(devPtr, count, location, flags, hStream, false);
}

CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                    unsigned int flags, CUstream hStream) {
  std::lock_guard<std::mutex> lock(D().mu);
  return Prefetch(devPtr, count, location, flags, hStream, true);
}

// Answers the attributes that have one value per range (all but ACCESSED_BY, which is not
// modelled and returns CUDA_ERROR_NOT_SUPPORTED); each is a 4-byte int.
CUresult cuMemRangeGetAttribute(void* data, size_t dataSize, CUmem_range_attribute attribute,
                                CUdeviceptr devPtr, size_t count) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (data == nullptr || dataSize != sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
  const Allocation* a = ManagedRange(devPtr, count);
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int* out = static_cast<int*>(data);
  switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY:
      *out = a->read_mostly ? 1 : 0;
      return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
      *out = LegacyDevice(a->preferred);
      return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
      *out = LegacyDevice(a->last_prefetch);
      return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
      *out = static_cast<int>(a->preferred.type);
      return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
      *out = a->preferred.id;
      return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
      *out = static_cast<int>(a->last_prefetch.type);
      return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
      *out = a->last_prefetch.id;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

}  // extern "C"
