/* Hooks of the faked memory views: cuMemGetInfo and cuDeviceTotalMem answer with the container's
 * limit and usage instead of the card's. */
#include <cuda.h>
#include <stddef.h>

#include "mem_arith.h"
#include "real_driver.h"
#include "state.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define REAL(type, name) VGPU_REAL_CUDA(type, name)
#define MISSING CUDA_ERROR_NOT_FOUND

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
    const uint64_t limit = vgpu_region_limit(&g_vgpu.region.region->devices[rdev]);
    const uint64_t used = vgpu_region_device_used(&g_vgpu.region, rdev);
    real_free =
        vgpu_refuses_memory() ? 0 : (size_t)vgpu_fake_free(limit, real_total, real_free, used);
    real_total = (size_t)vgpu_fake_total(limit, real_total);
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
    *bytes =
        (size_t)vgpu_fake_total(vgpu_region_limit(&g_vgpu.region.region->devices[rdev]), *bytes);
  }
  return rc;
}
