/* Per-process state of libvgpu: the visible devices, their region records, the allocation table.
 * Built lazily by the first hook that needs it (never at load time). */
#ifndef VGPU_STATE_H_
#define VGPU_STATE_H_

#include <pthread.h>
#include <stdint.h>

#include "alloc_table.h"
#include "env_config.h"
#include "region.h"

struct vgpu_state {
  struct vgpu_settings settings; /* the environment, read once (vgpu_state_settings) */
  int settings_ready;            /* atomic */
  int cuda_ready;                /* atomic: CUDA side initialised (devices known, slot claimed) */
  int nvml_ready;                /* atomic: region devices registered from NVML */
  int device_count;              /* visible CUDA devices */
  int region_dev[VGPU_REGION_MAX_DEVICES]; /* CUDA ordinal -> region record, -1 = untracked */
  /* Region record -> the UUID this process registered it with ("" = not ours). */
  char region_uuid[VGPU_REGION_MAX_DEVICES][VGPU_REGION_UUID_LEN];
  int oom_killer;
  int in_container_region; /* CUDA_DEVICE_MEMORY_SHARED_CACHE was set */
  struct vgpu_region_handle region;
  pthread_mutex_t lock; /* guards init, `table` and `ctx_owner` */
  struct vgpu_alloc_table table;
  /* (kind, key) -> owning CUcontext (in the size field) for memory that the driver frees with its
   * context: cuMemAlloc/Pitch/Managed and arrays. Stream-ordered, pool, VMM and graph memory
   * outlive contexts and are not listed. */
  struct vgpu_alloc_table ctx_owner;
  uint64_t last_reconcile_ns[VGPU_REGION_MAX_DEVICES];
};

extern struct vgpu_state g_vgpu;

/* Reads the environment once (logging the first malformed value); idempotent. */
const struct vgpu_settings* vgpu_state_settings(void);

/* Initialises the CUDA side (calls the real cuInit). 0 when limits are active. */
int vgpu_state_cuda(void);

/* Opens the region and registers the visible devices from NVML (NVML-only processes). */
int vgpu_state_nvml(void);

/* What a process of a container with a limit does when its region cannot be used (the file was
 * unusable, or found corrupt since): it refuses GPU memory allocations, as its processes could not
 * share the limit and could each take all of it. */
#define VGPU_FAIL_CLOSED_ADVICE                                                                  \
  "GPU memory allocations are refused (processes that cannot share the container's limit could " \
  "each take all of it): restart the container, or remove the file once none of its processes "  \
  "runs"

/* 1 when allocations must be refused because the region cannot be used (see above). */
int vgpu_refuses_memory(void);

/* Says once per process, on stderr, that the region cannot be used and what holds meanwhile. */
void vgpu_report_region_failure(void);

/* Region record for a device UUID, or -1. */
int vgpu_region_dev_by_uuid(const char* uuid);

/* Region record of the current context's device (CUDA ordinal in *ordinal), or -1. */
int vgpu_current_region_dev(int* ordinal);
int vgpu_ordinal_region_dev(int ordinal);

/* Ensures this process owns a slot (after fork the child claims its own). */
void vgpu_ensure_slot(void);

/* Measures this process's real footprint on `rdev` against its tracked allocations; rate-limited
 * to once a second unless `force`. Applies ACTIVE_OOM_KILLER. 1 when it measured (NVML lists the
 * process, or says it holds nothing), else 0. */
int vgpu_reconcile(int rdev, int force);

/* Forces vgpu_reconcile on every device of this process (after a context went away). */
void vgpu_reconcile_all(void);

/* The region's drain probe (vgpu_region_drain_probe): 1 while NVML lists `pid` on GPU `uuid`. */
int vgpu_nvml_still_holds(const char* uuid, unsigned pid);

uint64_t vgpu_now_ns(void);

#endif
