#include "proc_table.h"

#include <string.h>

#define PER_THREAD_FLAG 2u /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */

const struct vgpu_proc_entry* vgpu_proc_select(const struct vgpu_proc_entry* table, int count,
                                               const char* symbol, int cuda_version,
                                               uint64_t flags) {
  if (symbol == NULL) return NULL;
  int lo = 0;
  int hi = count;
  while (lo < hi) { /* first entry with symbol >= requested */
    const int mid = lo + (hi - lo) / 2;
    if (strcmp(table[mid].symbol, symbol) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  const struct vgpu_proc_entry* plain = NULL;
  const struct vgpu_proc_entry* per_thread = NULL;
  for (int i = lo; i < count && strcmp(table[i].symbol, symbol) == 0; ++i) {
    if (table[i].version > cuda_version) continue;
    if (table[i].per_thread) {
      if (per_thread == NULL || table[i].version > per_thread->version) per_thread = &table[i];
    } else {
      if (plain == NULL || table[i].version > plain->version) plain = &table[i];
    }
  }
  if ((flags & PER_THREAD_FLAG) != 0 && per_thread != NULL) return per_thread;
  return plain;
}
