/* Process-local record of what this process allocated (pointer or handle -> size, device), so
 * that a free releases exactly what the allocation reserved. Thread-safe; grows with malloc. */
#ifndef VGPU_ALLOC_TABLE_H_
#define VGPU_ALLOC_TABLE_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vgpu_alloc_kind {
  VGPU_ALLOC_LINEAR = 1, /* cuMemAlloc*, managed, async, pool: keyed by device pointer */
  VGPU_ALLOC_HANDLE = 2, /* cuMemCreate: keyed by generic allocation handle */
  VGPU_ALLOC_ARRAY = 3,  /* cuArray*Create: keyed by CUarray */
  VGPU_ALLOC_MIPMAP = 4, /* cuMipmappedArrayCreate: keyed by CUmipmappedArray */
};

struct vgpu_alloc_entry {
  uint64_t key; /* 0 = empty */
  uint64_t size;
  int32_t kind; /* enum vgpu_alloc_kind; -1 = deleted */
  int32_t device;
};

struct vgpu_alloc_table {
  struct vgpu_alloc_entry* slots;
  uint64_t capacity; /* power of two */
  uint64_t used;     /* live + deleted */
  uint64_t live;
};

/* Returns 0, 1 when (kind, key) was already tracked — the driver reused an address whose free we
 * did not see (e.g. a destroyed context) — with the replaced entry in old_size / old_device so the
 * caller releases it, or -1 when out of memory (the caller then does not track the allocation). */
int vgpu_alloc_put(struct vgpu_alloc_table* t, int kind, uint64_t key, uint64_t size, int device,
                   uint64_t* old_size, int* old_device);

/* Removes the entry; 1 with size/device when found, 0 when the key is not tracked. */
int vgpu_alloc_take(struct vgpu_alloc_table* t, int kind, uint64_t key, uint64_t* size,
                    int* device);

/* Sum of live sizes on `device`. */
uint64_t vgpu_alloc_sum(const struct vgpu_alloc_table* t, int device);

/* Forgets everything (fork child: the parent's allocations are not the child's). */
void vgpu_alloc_reset(struct vgpu_alloc_table* t);

#ifdef __cplusplus
}
#endif

#endif
