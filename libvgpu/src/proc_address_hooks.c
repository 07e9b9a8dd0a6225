/* Hooks of cuGetProcAddress: the driver's answer is swapped for our hook of the same ABI, chosen
 * from the table generated from cudaTypedefs.h (proc_table.h). */
#include <cuda.h>
#include <stddef.h>

#include "proc_table.h"
#include "real_driver.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define REAL(type, name) VGPU_REAL_CUDA(type, name)
#define MISSING CUDA_ERROR_NOT_FOUND

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
