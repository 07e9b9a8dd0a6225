/* Admission of one allocation against the container's limit: reserve first, call the driver,
 * then finish (record on success, roll back on failure). */
#ifndef VGPU_ADMISSION_H_
#define VGPU_ADMISSION_H_

#include <cuda.h>
#include <stdint.h>

struct vgpu_admission {
  int region_dev; /* -1: device not tracked (no limits possible), nothing reserved */
  int ordinal;    /* CUDA device ordinal */
  uint64_t bytes; /* reserved so far */
};

/* Reserve `bytes` on the current context's device / on device `ordinal`. CUDA_SUCCESS or
 * CUDA_ERROR_OUT_OF_MEMORY (after reaping dead processes and re-measuring once). */
CUresult vgpu_admit_current(struct vgpu_admission* a, uint64_t bytes);
CUresult vgpu_admit_ordinal(struct vgpu_admission* a, int ordinal, uint64_t bytes);

/* Reserve more / give some back for an admission in progress. grow: 0 or -1 (over limit). */
int vgpu_admission_grow(struct vgpu_admission* a, uint64_t extra);
void vgpu_admission_shrink(struct vgpu_admission* a, uint64_t less);

/* On success records (kind, key) -> bytes; on failure releases the reservation. */
void vgpu_admission_finish(struct vgpu_admission* a, CUresult rc, int kind, uint64_t key);

/* As vgpu_admission_finish, and remembers the current context as the owner: memory the driver
 * frees when that context is destroyed (cuMemAlloc, pitch, managed, arrays). */
void vgpu_admission_finish_in_context(struct vgpu_admission* a, CUresult rc, int kind,
                                      uint64_t key);

/* Context memory is the driver's (measured once the context exists), but it counts against the
 * limit like an allocation: processes starting beside a container at its limit must not take it
 * over with their contexts. Before the driver creates a context, the container's measured context
 * footprint (vgpu_region_context_hint; nothing before the first measurement) is reserved; after,
 * the measurement replaces it. */
struct vgpu_context_admission {
  int region_dev;  /* -1: device not tracked, nothing reserved */
  int ordinal;     /* CUDA device ordinal */
  uint64_t bytes;  /* reserved before creation */
  uint64_t before; /* this process's overhead on the device before the reservation */
  int first;       /* holds the region's first-context lock (none measured yet) */
};
/* CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY (the container is at its limit, or fails closed). */
CUresult vgpu_admit_context(struct vgpu_context_admission* c, int ordinal);
/* After the driver answered `rc`: measures. CUDA_ERROR_OUT_OF_MEMORY when the new context took
 * the device over its limit: the caller destroys it and calls vgpu_context_undone. */
CUresult vgpu_context_created(struct vgpu_context_admission* c, CUresult rc);
void vgpu_context_undone(struct vgpu_context_admission* c);

/* Releases what (kind, key) reserved; untracked keys are ignored. */
void vgpu_release_tracked(int kind, uint64_t key);

/* The driver destroyed `ctx` and freed what it owned: releases that memory at once and
 * re-measures the context overhead of every device. */
void vgpu_release_context(CUcontext ctx);

#endif
