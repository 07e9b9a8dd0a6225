#include "admission.h"

#include <time.h>

#include "log.h"
#include "mem_arith.h"
#include "real_driver.h"
#include "state.h"
#include "vgpu/env_contract.h"

typedef int (*reserve_fn)(struct vgpu_region_handle*, int, uint64_t);

/* A process of the container that just died still holds its memory until the driver has torn it
 * down (vgpu_region_reap keeps it charged meanwhile): a request that finds the limit taken by such
 * memory waits for it, up to DRAIN_WAIT_MS, rather than failing a process that starts as another
 * exits (a restart, the next step of a pipeline). */
#define DRAIN_WAIT_MS 1000
#define DRAIN_POLL_MS 5

/* Before refusing: free what dead processes still hold and re-measure our own footprint. */
static void reap_and_remeasure(int rdev) {
  vgpu_region_reap(&g_vgpu.region, 1);
  vgpu_reconcile(rdev, 1);
}

static int reserve_waiting_for_drain(int rdev, reserve_fn reserve, uint64_t bytes) {
  int rc = reserve(&g_vgpu.region, rdev, bytes);
  for (int waited = 0;
       rc != 0 && waited < DRAIN_WAIT_MS && vgpu_region_draining(&g_vgpu.region, rdev);
       waited += DRAIN_POLL_MS) {
    const struct timespec poll = {0, DRAIN_POLL_MS * 1000000L};
    nanosleep(&poll, NULL);
    vgpu_region_reap(&g_vgpu.region, 1);
    rc = reserve(&g_vgpu.region, rdev, bytes);
  }
  return rc;
}

static int reserve_with_retry(int rdev, uint64_t bytes) {
  vgpu_ensure_slot();
  vgpu_reconcile(rdev, 0);
  if (vgpu_region_reserve(&g_vgpu.region, rdev, bytes) == 0) return 0;
  reap_and_remeasure(rdev);
  return reserve_waiting_for_drain(rdev, vgpu_region_reserve, bytes);
}

/* 1 when this process's environment limits CUDA device `ordinal` (memory or compute). */
static int limited_by_environment(int ordinal) {
  const struct vgpu_settings* s = vgpu_state_settings();
  return ordinal >= 0 && ordinal < s->count && (s->mem_limited[ordinal] || s->sm_percent[ordinal]);
}

/* Refusals that fail closed say so once per process (LIBCUDA_LOG_LEVEL 1): a program that gets
 * only out-of-memory errors must be able to tell why. */
static int g_told_no_record;
static int g_told_no_memory[VGPU_REGION_MAX_DEVICES];

static int tell_once(int* told) {
  return __atomic_exchange_n(told, 1, __ATOMIC_RELAXED) == 0;
}

static CUresult refuse(struct vgpu_admission* a) {
  a->region_dev = -1;
  return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult admit(struct vgpu_admission* a, int rdev, int ordinal, uint64_t bytes) {
  a->region_dev = rdev;
  a->ordinal = ordinal;
  a->bytes = 0;
  if (rdev < 0) {
    /* A limited device without a record (the region's 16 records taken) is not unlimited. */
    if (ordinal < 0 || ordinal >= g_vgpu.device_count || !limited_by_environment(ordinal)) {
      return CUDA_SUCCESS;
    }
    if (tell_once(&g_told_no_record)) {
      VGPU_ERROR("device %d has a limit but no record in the shared region (all %d taken); %s",
                 ordinal, VGPU_REGION_MAX_DEVICES, VGPU_FAIL_CLOSED_ADVICE);
    }
    return refuse(a);
  }
  if (vgpu_refuses_memory()) {
    vgpu_report_region_failure();
    return refuse(a);
  }
  if (reserve_with_retry(rdev, bytes) != 0) {
    const struct vgpu_region_device* d = &g_vgpu.region.region->devices[rdev];
    const uint64_t limit = vgpu_region_limit(d);
    if (limit == 0 && tell_once(&g_told_no_memory[rdev])) {
      VGPU_WARN(
          "device %d has a memory limit of 0 bytes (%s is 0, or could not be read): every "
          "allocation on it is refused",
          ordinal, VGPU_ENV_MEMORY_LIMIT);
    }
    VGPU_INFO("allocation of %llu bytes refused on device %d: %llu of %llu bytes in use",
              (unsigned long long)bytes, ordinal,
              (unsigned long long)__atomic_load_n(&d->mem_used, __ATOMIC_RELAXED),
              (unsigned long long)limit);
    return refuse(a);
  }
  a->bytes = bytes;
  return CUDA_SUCCESS;
}

CUresult vgpu_admit_current(struct vgpu_admission* a, uint64_t bytes) {
  int ordinal = -1;
  const int rdev = vgpu_current_region_dev(&ordinal);
  return admit(a, rdev, ordinal, bytes);
}

CUresult vgpu_admit_ordinal(struct vgpu_admission* a, int ordinal, uint64_t bytes) {
  return admit(a, vgpu_ordinal_region_dev(ordinal), ordinal, bytes);
}

int vgpu_admission_grow(struct vgpu_admission* a, uint64_t extra) {
  if (a->region_dev < 0) return 0;
  if (reserve_with_retry(a->region_dev, extra) != 0) return -1;
  a->bytes += extra;
  return 0;
}

void vgpu_admission_shrink(struct vgpu_admission* a, uint64_t less) {
  if (a->region_dev < 0) return;
  if (less > a->bytes) less = a->bytes;
  vgpu_region_release(&g_vgpu.region, a->region_dev, less);
  a->bytes -= less;
}

/* Records a finished admission; 1 when (kind, key) is now tracked. */
static int finish(struct vgpu_admission* a, CUresult rc, int kind, uint64_t key, CUcontext owner) {
  if (a->region_dev < 0) return 0;
  if (rc != CUDA_SUCCESS || key == 0) {
    vgpu_region_release(&g_vgpu.region, a->region_dev, a->bytes);
    return 0;
  }
  uint64_t old_size = 0;
  int old_dev = -1;
  pthread_mutex_lock(&g_vgpu.lock);
  /* Out of memory for the table (-1): keep the bytes counted (conservative) but untracked. */
  const int rc_put =
      vgpu_alloc_put(&g_vgpu.table, kind, key, a->bytes, a->region_dev, &old_size, &old_dev);
  if (rc_put >= 0) {
    uint64_t old_owner = 0;
    int unused = 0;
    if (owner != NULL) {
      /* Without room for the owner the bytes stay counted until freed (as before contexts). */
      (void)vgpu_alloc_put(&g_vgpu.ctx_owner, kind, key, (uint64_t)(uintptr_t)owner, 0, &old_owner,
                           &unused);
    } else {
      (void)vgpu_alloc_take(&g_vgpu.ctx_owner, kind, key, &old_owner, &unused);
    }
  }
  pthread_mutex_unlock(&g_vgpu.lock);
  if (rc_put == 1) vgpu_region_release(&g_vgpu.region, old_dev, old_size);
  return rc_put >= 0;
}

void vgpu_admission_finish(struct vgpu_admission* a, CUresult rc, int kind, uint64_t key) {
  (void)finish(a, rc, kind, key, NULL);
}

void vgpu_admission_finish_in_context(struct vgpu_admission* a, CUresult rc, int kind,
                                      uint64_t key) {
  CUcontext owner = NULL;
  if (rc == CUDA_SUCCESS && a->region_dev >= 0) {
    typedef CUresult (*current_fn)(CUcontext*);
    current_fn current = VGPU_REAL_CUDA(current_fn, cuCtxGetCurrent);
    if (current == NULL || current(&owner) != CUDA_SUCCESS) owner = NULL;
  }
  (void)finish(a, rc, kind, key, owner);
}

CUresult vgpu_admit_context(struct vgpu_context_admission* c, int ordinal) {
  c->region_dev = -1;
  c->ordinal = ordinal;
  c->bytes = 0;
  c->before = 0;
  c->first = 0;
  struct vgpu_admission a;
  /* The fail-closed checks, and no new context while the container is over its limit. */
  const int rdev = vgpu_ordinal_region_dev(ordinal);
  const CUresult rc = admit(&a, rdev, ordinal, 0);
  if (rc != CUDA_SUCCESS || a.region_dev < 0) return rc;
  c->region_dev = rdev;
  c->before = vgpu_region_slot_overhead(&g_vgpu.region, rdev);
  uint64_t hint = vgpu_region_context_hint(&g_vgpu.region, rdev);
  if (hint == 0 && vgpu_region_begin_first_context(&g_vgpu.region)) {
    /* No context of the container measured yet: several processes starting together would each
     * create one unreserved and take the container over its limit until measured. One at a time
     * until the first is measured; whoever waited finds the size to reserve. */
    hint = vgpu_region_context_hint(&g_vgpu.region, rdev);
    if (hint == 0) {
      c->first = 1;
      return CUDA_SUCCESS;
    }
    vgpu_region_end_first_context(&g_vgpu.region);
  }
  if (hint == 0) return CUDA_SUCCESS;
  if (vgpu_region_reserve_overhead(&g_vgpu.region, rdev, hint) != 0) {
    reap_and_remeasure(rdev);
    c->before = vgpu_region_slot_overhead(&g_vgpu.region, rdev);
    if (reserve_waiting_for_drain(rdev, vgpu_region_reserve_overhead, hint) != 0) {
      VGPU_INFO("context on device %d refused: its %llu bytes do not fit under the limit", ordinal,
                (unsigned long long)hint);
      c->region_dev = -1;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  c->bytes = hint;
  return CUDA_SUCCESS;
}

static CUresult end_first(struct vgpu_context_admission* c, CUresult rc) {
  if (c->first) vgpu_region_end_first_context(&g_vgpu.region);
  c->first = 0;
  return rc;
}

CUresult vgpu_context_created(struct vgpu_context_admission* c, CUresult rc) {
  const int rdev = c->region_dev;
  if (rdev < 0) return rc;
  const int measured = vgpu_reconcile(rdev, 1);
  if (rc != CUDA_SUCCESS) {
    /* Nothing was created: a measurement replaced the reservation, else take it back. */
    if (!measured) vgpu_region_release_overhead(&g_vgpu.region, rdev, c->bytes);
    return end_first(c, rc);
  }
  const uint64_t after = vgpu_region_slot_overhead(&g_vgpu.region, rdev);
  if (measured && after > c->before)
    vgpu_region_note_context(&g_vgpu.region, rdev, after - c->before);
  const struct vgpu_region_device* d = &g_vgpu.region.region->devices[rdev];
  if (vgpu_fits(vgpu_region_device_used(&g_vgpu.region, rdev), 0, vgpu_region_limit(d))) {
    return end_first(c, CUDA_SUCCESS);
  }
  VGPU_INFO("context on device %d refused: it took the device over its limit", c->ordinal);
  /* Measured now: the others reserve its size, and find no room while it still exists. */
  return end_first(c, CUDA_ERROR_OUT_OF_MEMORY);
}

void vgpu_context_undone(struct vgpu_context_admission* c) {
  if (c->region_dev < 0) return;
  if (!vgpu_reconcile(c->region_dev, 1)) {
    vgpu_region_release_overhead(&g_vgpu.region, c->region_dev, c->bytes);
  }
}

void vgpu_release_tracked(int kind, uint64_t key) {
  uint64_t size = 0;
  int rdev = -1;
  pthread_mutex_lock(&g_vgpu.lock);
  const int found = vgpu_alloc_take(&g_vgpu.table, kind, key, &size, &rdev);
  if (found) {
    uint64_t owner = 0;
    int unused = 0;
    (void)vgpu_alloc_take(&g_vgpu.ctx_owner, kind, key, &owner, &unused);
  }
  pthread_mutex_unlock(&g_vgpu.lock);
  if (found) vgpu_region_release(&g_vgpu.region, rdev, size);
}

void vgpu_release_context(CUcontext ctx) {
  if (ctx == NULL) return;
  const uint64_t owner = (uint64_t)(uintptr_t)ctx;
  uint64_t freed[VGPU_REGION_MAX_DEVICES] = {0};
  pthread_mutex_lock(&g_vgpu.lock);
  /* Taking an entry only tombstones its slot, so the scan may take as it goes. */
  struct vgpu_alloc_table* owners = &g_vgpu.ctx_owner;
  for (uint64_t i = 0; i < owners->capacity; ++i) {
    const struct vgpu_alloc_entry e = owners->slots[i];
    if (e.key == 0 || e.kind <= 0 || e.size != owner) continue;
    uint64_t size = 0;
    int rdev = -1;
    uint64_t unused_size = 0;
    int unused_dev = 0;
    (void)vgpu_alloc_take(owners, e.kind, e.key, &unused_size, &unused_dev);
    if (vgpu_alloc_take(&g_vgpu.table, e.kind, e.key, &size, &rdev) && rdev >= 0 &&
        rdev < VGPU_REGION_MAX_DEVICES) {
      freed[rdev] += size;
    }
  }
  pthread_mutex_unlock(&g_vgpu.lock);
  for (int d = 0; d < VGPU_REGION_MAX_DEVICES; ++d) {
    if (freed[d] != 0) vgpu_region_release(&g_vgpu.region, d, freed[d]);
  }
  /* The context's own memory (and its modules) left with it: measure again now. */
  vgpu_reconcile_all();
}
