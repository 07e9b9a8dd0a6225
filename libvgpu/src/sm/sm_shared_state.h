#pragma once

// Shared-memory layouts of the SM limiter (C-compatible, fixed-size, zero = valid initial state).
//
// 1. Per container: one VgpuSmDeviceShared per visible device, shared by all the container's
//    processes. It lives in the container's shared region (reserved SM fields), or, when the
//    region provides none, in the file `<CUDA_DEVICE_MEMORY_SHARED_CACHE>.sm` (VgpuSmRegion).
// 2. Per physical GPU, node-wide: VgpuSmPeerTable in `<peer dir>/vgpu-sm-<GPU UUID>` (peer dir
//    = /tmp/vgpulock, which HAMi mounts into every container), one slot per limited process that
//    uses the GPU, so that tenants of different containers can see how many of them are busy.
//
// Every field is updated with atomics; no lock is ever held across a sleep; a process killed by
// SIGKILL leaves only counters that time or the next reader repairs (see docs/sm-limit.md).

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VGPU_SM_REGION_MAGIC 0x564d5347u /* "GSMV" */
#define VGPU_SM_REGION_VERSION 1u
#define VGPU_SM_MAX_DEVICES 16

/* Values of VgpuSmDeviceShared.sharing: written by the node monitor, read by libvgpu under
 * GPU_CORE_UTILIZATION_POLICY=default. 0 = nobody drives it: the limit holds. */
#define VGPU_SM_SHARING_UNKNOWN 0
#define VGPU_SM_SHARING_SHARED 1 /* another container's work shares this GPU: the limit holds */
#define VGPU_SM_SHARING_ALONE 2  /* this container is alone on the GPU: the limit is lifted */

typedef struct VgpuSmDeviceShared {
  /* GCRA "theoretical arrival time" of the container's GPU-time budget, CLOCK_MONOTONIC ns.
   * Charging g ns of GPU time at limit p% advances it by g*100/p; launches wait while it is in
   * the future; it never falls more than the burst window behind now. */
  int64_t tat_ns;
  int32_t sharing;       /* VGPU_SM_SHARING_*, written by the node monitor */
  int32_t reserved0;     /* zero */
  uint64_t charged_ns;   /* GPU time charged to the budget (after the sharing correction) */
  uint64_t measured_ns;  /* GPU time measured by events (before the sharing correction) */
  uint64_t throttled_ns; /* time launches were held back */
  uint64_t reserved[3];
} VgpuSmDeviceShared; /* 64 bytes */

typedef struct VgpuSmRegion {
  uint32_t magic;   /* VGPU_SM_REGION_MAGIC once initialised */
  uint32_t version; /* VGPU_SM_REGION_VERSION */
  uint32_t size;    /* sizeof(VgpuSmRegion) */
  uint32_t reserved0;
  uint64_t reserved[7];
  VgpuSmDeviceShared devices[VGPU_SM_MAX_DEVICES];
} VgpuSmRegion;

#define VGPU_SM_PEER_MAGIC 0x52455047u /* "GPER" */
#define VGPU_SM_PEER_VERSION 2u
#define VGPU_SM_PEER_SLOTS 64
/* Slot i is owned by the process holding an fcntl write lock on byte VGPU_SM_PEER_LOCK_BASE + i of
 * the file; the kernel drops it when the process dies, which is how dead slots are found. */
#define VGPU_SM_PEER_LOCK_BASE 1048576

typedef struct VgpuSmPeerSlot {
  int32_t waiting;          /* 1 while the owner waits for the GPU lease */
  int32_t priority;         /* CUDA_TASK_PRIORITY of the owner: 0 high, 1 low */
  int64_t waiting_since_ns; /* CLOCK_MONOTONIC when it started waiting */
  uint64_t reserved[2];
} VgpuSmPeerSlot; /* 32 bytes */

/* The GPU lease: (holder slot + 1) << 56 | (lease end, CLOCK_MONOTONIC microseconds). 0 = free.
 * Only the holder's limited work is in flight on the GPU, so each tenant's event-measured GPU
 * time is its own, whatever the GPU's scheduling between contexts. A lease past its end is free
 * for the taking: a holder that died or went quiet never blocks the others for longer than that. */
#define VGPU_SM_LEASE_OWNER_SHIFT 56
#define VGPU_SM_LEASE_TIME_MASK ((UINT64_C(1) << VGPU_SM_LEASE_OWNER_SHIFT) - 1)

typedef struct VgpuSmPeerTable {
  uint32_t magic;
  uint32_t version;
  uint32_t slots; /* VGPU_SM_PEER_SLOTS */
  uint32_t reserved0;
  uint64_t lease;     /* atomic, see VGPU_SM_LEASE_* */
  uint32_t lease_gen; /* bumped (and futex-woken) whenever the lease is released or handed on */
  uint32_t reserved1;
  /* CLOCK_MONOTONIC ns by which the last holder expected its queued work to finish when it
   * handed the lease on (it hands over with one batch still queued so the GPU never idles; the
   * next holder's first measured interval is reduced by that overlap). */
  int64_t handoff_drain_ns;
  uint64_t reserved[4];
  VgpuSmPeerSlot slot[VGPU_SM_PEER_SLOTS];
} VgpuSmPeerTable;

#ifdef __cplusplus
}  // extern "C"
#endif
