// Virtual memory management: physical handles (charged at cuMemCreate, freed when released and
// unmapped), address reservations (no memory), mappings. Granularity is 2 MiB.

#include "driver_state.h"

using namespace vgpu::fake;

namespace {

bool ValidDeviceProp(const CUmemAllocationProp* prop) {
  return prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
         CheckDevice(prop->location.id) == CUDA_SUCCESS;
}

void DropIfUnused(CUmemGenericAllocationHandle h) {
  auto it = D().handles.find(h);
  if (it != D().handles.end() && it->second.released && it->second.mappings == 0) {
    Uncharge(it->second.physical, it->second.size);
    D().handles.erase(it);
  }
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags option) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (granularity == nullptr || !ValidDeviceProp(prop)) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
      option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (handle == nullptr || !ValidDeviceProp(prop) || flags != 0 || size == 0 ||
      size % kGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const int physical = PhysicalOf(prop->location.id);
  if (auto rc = Charge(physical, size); rc != CUDA_SUCCESS) return rc;
  const auto h = D().next_handle++;
  D().handles[h] = PhysicalHandle{size, physical, false, 0};
  *handle = h;
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto it = D().handles.find(handle);
  if (it == D().handles.end() || it->second.released) return CUDA_ERROR_INVALID_VALUE;
  it->second.released = true;  // memory stays while mapped, as with the real driver
  DropIfUnused(handle);
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr /*addr*/,
                             unsigned long long flags) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (ptr == nullptr || size == 0 || size % kGranularity != 0 || flags != 0 ||
      (alignment & (alignment - 1)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const CUdeviceptr base = ReserveAddress(size, std::max<uint64_t>(alignment, kGranularity));
  D().reservations[base] = size;
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto it = D().reservations.find(ptr);
  if (it == D().reservations.end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
  auto m = D().mappings.lower_bound(ptr);
  if (m != D().mappings.end() && m->first < ptr + size)
    return CUDA_ERROR_INVALID_VALUE;  // still mapped
  D().reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto h = D().handles.find(handle);
  if (h == D().handles.end() || h->second.released) return CUDA_ERROR_INVALID_HANDLE;
  if (flags != 0 || size == 0 || size % kGranularity != 0 || offset % kGranularity != 0 ||
      offset + size > h->second.size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto r = D().reservations.upper_bound(ptr);
  if (r == D().reservations.begin()) return CUDA_ERROR_INVALID_VALUE;
  --r;
  if (ptr + size > r->first + r->second) return CUDA_ERROR_INVALID_VALUE;  // outside reservation
  auto next = D().mappings.lower_bound(ptr);
  if (next != D().mappings.end() && next->first < ptr + size) return CUDA_ERROR_INVALID_VALUE;
  if (next != D().mappings.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.size > ptr) return CUDA_ERROR_INVALID_VALUE;  // overlap
  }
  D().mappings[ptr] = Mapping{size, handle};
  ++h->second.mappings;
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  auto it = D().mappings.find(ptr);
  if (it == D().mappings.end() || it->second.size != size) return CUDA_ERROR_INVALID_VALUE;
  const auto handle = it->second.handle;
  D().mappings.erase(it);
  --D().handles[handle].mappings;
  DropIfUnused(handle);
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  std::lock_guard<std::mutex> lock(D().mu);
  if (auto rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (desc == nullptr || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        CheckDevice(desc[i].location.id) != CUDA_SUCCESS) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
  }
  // Every byte of [ptr, ptr+size) must be mapped.
  CUdeviceptr cursor = ptr;
  auto it = D().mappings.upper_bound(ptr);
  if (it == D().mappings.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  while (cursor < ptr + size) {
    if (it == D().mappings.end() || it->first > cursor || it->first + it->second.size <= cursor) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    cursor = it->first + it->second.size;
    ++it;
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
