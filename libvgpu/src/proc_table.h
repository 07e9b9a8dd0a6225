/* The cuGetProcAddress table: every driver ABI of the CUDA headers (generated) and the lookup that
 * picks the ABI the driver would pick for a request. */
#ifndef VGPU_PROC_TABLE_H_
#define VGPU_PROC_TABLE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_proc_entry {
  const char* symbol; /* base name as passed to cuGetProcAddress, e.g. "cuMemAlloc" */
  int version;        /* CUDA version that introduced this ABI, e.g. 3020 */
  int per_thread;     /* 1 for the _ptsz/_ptds variant */
  void (*hook)(void); /* our hook for exactly this ABI, or NULL (pass the driver's through) */
};

extern const struct vgpu_proc_entry vgpu_proc_entries[]; /* sorted by symbol, version */
extern const int vgpu_proc_entry_count;

/* The entry of the ABI the driver returns for (symbol, cuda_version, flags): the highest version
 * <= cuda_version, in the per-thread variant when flags asks for it
 * (CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) and one exists. NULL when none qualifies. */
const struct vgpu_proc_entry* vgpu_proc_select(const struct vgpu_proc_entry* table, int count,
                                               const char* symbol, int cuda_version,
                                               uint64_t flags);

#ifdef __cplusplus
}
#endif

#endif
