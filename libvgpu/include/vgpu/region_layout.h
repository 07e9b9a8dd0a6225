/* Layout of the shared region file of one container (CUDA_DEVICE_MEMORY_SHARED_CACHE).
 *
 * Written by libvgpu.so in every CUDA/NVML process of the container; read by the node monitor.
 * C-compatible (C99 and C++), fixed-size, little-endian x86-64 / aarch64 layout, no pointers.
 *
 * Concurrency rules (readers outside libvgpu only need the first one):
 *  - Counters (`mem_used`, slot `mem_used[]`, `mem_overhead[]`, SM fields) are 64-bit values read
 *    with atomic loads (`__atomic_load_n(p, __ATOMIC_RELAXED)`). Readers never take a lock.
 *  - A device's `mem_used` and the slots' per-device counters change together under that device's
 *    robust process-shared mutex (`lock`), so that a process killed at any instruction leaves the
 *    pair consistent: the next locker sees EOWNERDEAD and recomputes the total from the slots.
 *  - Creating the file and registering a device happen under flock(2) on the file (released by the
 *    kernel when a holder dies).
 *  - A process slot is claimed by CAS on `pid` (0 = free) and identified by (pid, start_time);
 *    a slot whose process is gone (or whose pid now has another start time) is reaped by any
 *    process that looks: its counters are subtracted from the device totals and it is freed.
 *  - Slots never move; `device_count` only grows; device records are never removed.
 */
#ifndef VGPU_REGION_LAYOUT_H_
#define VGPU_REGION_LAYOUT_H_

#include <stdint.h>

#define VGPU_REGION_MAGIC 0x31555047564755ULL /* "UGVGPU1" read as little-endian bytes */
/* 2: the SM fields of a device record name what the limiter keeps there (budget, usage); version 1
 * kept an opaque budget in sm_reserved[]. */
#define VGPU_REGION_VERSION 2u
#define VGPU_REGION_MAX_DEVICES 16
#define VGPU_REGION_MAX_PROCS 1024
#define VGPU_REGION_UUID_LEN 96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define VGPU_REGION_LOCK_BYTES 64

/* Slot states (vgpu_region_proc.status). */
#define VGPU_SLOT_FREE 0u
#define VGPU_SLOT_CLAIMING 1u /* pid written, start_time not yet: not reaped while pid lives */
#define VGPU_SLOT_ACTIVE 2u

/* Bits of vgpu_region_header.flags. */
/* Not written by this release (ACTIVE_OOM_KILLER is each process's own setting) and read by
 * nobody; kept so that the bit is not given another meaning within version 2. */
#define VGPU_REGION_FLAG_OOM_KILLER 1u
/* A libvgpu process found the region corrupt (its body: device locks, usage counters, device
 * count) after it was laid out: the container's processes refuse GPU memory allocations on their
 * limited devices until the container restarts. For the node monitor to show; never cleared. */
#define VGPU_REGION_FLAG_UNUSABLE 2u

/* Bits of vgpu_region_device.flags. */
/* The record's limit is 0 bytes: `mem_limit` 0 means that nothing may be allocated (an explicit
 * 0, or a limit libvgpu could not read: it fails closed), not "unlimited". Readers that predate
 * the bit read such a record as unlimited. */
#define VGPU_DEVICE_FLAG_NO_MEMORY 1u

/* Values of vgpu_region_device.sm_sharing, written by the node monitor and read by libvgpu under
 * GPU_CORE_UTILIZATION_POLICY=default. */
#define VGPU_SM_SHARING_UNKNOWN 0 /* nobody drives it: the limit holds */
#define VGPU_SM_SHARING_SHARED 1  /* another container uses this GPU: the limit holds */
#define VGPU_SM_SHARING_ALONE 2   /* this container is alone on the GPU: the limit is lifted */

/* Values of vgpu_region_device.sm_policy: the container's GPU_CORE_UTILIZATION_POLICY, written by
 * libvgpu with the record (the container's first process fixes it), shown by the node monitor. */
#define VGPU_SM_POLICY_DEFAULT \
  0u                            /* the limit holds unless the monitor says the GPU is ours alone */
#define VGPU_SM_POLICY_FORCE 1u /* the limit always holds */
#define VGPU_SM_POLICY_DISABLE 2u /* no limit */
/* VGPU_SHARING_MODE=mps: NVIDIA MPS partitions the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE = the
 * limit); libvgpu does not throttle. */
#define VGPU_SM_POLICY_MPS 3u

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_region_device {
  char uuid[VGPU_REGION_UUID_LEN]; /* "GPU-xxxxxxxx-..." NUL-terminated; key of the record */
  uint64_t mem_limit;    /* bytes; 0 = unlimited, unless flags has VGPU_DEVICE_FLAG_NO_MEMORY */
  uint64_t mem_physical; /* bytes of the card, as the driver reported it */
  uint64_t mem_used;     /* atomic: sum over live slots of mem_used[d] + mem_overhead[d] */
  uint32_t sm_limit;     /* percent of the card; 0 = unlimited */
  uint32_t flags; /* VGPU_DEVICE_FLAG_*; written with the record, before device_count counts it */
  uint8_t lock[VGPU_REGION_LOCK_BYTES]; /* robust process-shared pthread mutex (opaque) */
  /* --- SM (compute) limit of the container on this GPU: libvgpu/src/sm/, docs/sm-limit.md --- */
  int32_t sm_sharing; /* atomic; the node monitor's VGPU_SM_SHARING_* flag (policy default) */
  uint32_t sm_policy; /* VGPU_SM_POLICY_*; written with the record, like sm_limit */
  /* atomic; the container's GPU-time budget as a GCRA counter: the CLOCK_MONOTONIC time at which
   * the GPU time charged so far is paid off at the limit's rate. Launches wait while it lies in the
   * future; it never falls further behind `now` than the burst window. */
  int64_t sm_tat_ns;
  uint64_t sm_busy_ns;      /* atomic; the container's kernel-busy time measured on this GPU */
  uint64_t sm_charged_ns;   /* atomic; its share of that time, charged to the budget */
  uint64_t sm_throttled_ns; /* atomic; time its launches waited for budget */
  uint64_t sm_reserved[11];
  /* atomic; the memory a process of the container was measured to hold right after creating a
   * context on this GPU (the largest seen): what a new context reserves against the limit before
   * the driver creates it, so that processes starting beside a container at its limit cannot take
   * it over. A hint (0: none yet); libvgpu clamps what it reads. */
  uint64_t context_bytes;
  uint64_t reserved[15];
};

struct vgpu_region_proc {
  int32_t pid;         /* atomic; 0 = free. PID in the container's PID namespace */
  uint32_t status;     /* atomic; VGPU_SLOT_* */
  uint64_t start_time; /* field 22 of /proc/<pid>/stat (clock ticks since boot) */
  int32_t priority;    /* CUDA_TASK_PRIORITY (0 high, 1 low) */
  uint32_t reserved0;
  uint64_t mem_used[VGPU_REGION_MAX_DEVICES]; /* bytes of tracked allocations, per device */
  uint64_t
      mem_overhead[VGPU_REGION_MAX_DEVICES]; /* measured context/module/pool bytes, per device */
  /* --- SM limiter, per process and device --- */
  uint64_t sm_gpu_time_ns[VGPU_REGION_MAX_DEVICES];    /* GPU time charged to this process */
  uint64_t sm_last_kernel_ns[VGPU_REGION_MAX_DEVICES]; /* CLOCK_MONOTONIC end of its last kernel */
  /* atomic; the process's PID in the host's PID namespace, written by the node monitor (0 =
   * unknown). NVML reports host PIDs: in a container with its own PID namespace, this is how
   * libvgpu finds its own entries (context memory, nvidia-smi's process list). Valid only while
   * `pid` and `start_time` are the ones the monitor matched: it writes `host_start_time` with it.
   */
  int32_t host_pid;
  uint32_t reserved1;
  uint64_t host_start_time; /* atomic; start_time of the slot when host_pid was written */
  uint64_t reserved[14];
};

struct vgpu_region_header {
  uint64_t magic;       /* VGPU_REGION_MAGIC, written last when the file is created */
  uint32_t version;     /* VGPU_REGION_VERSION */
  uint32_t header_size; /* sizeof(struct vgpu_region_header) */
  uint64_t file_size;   /* sizeof(struct vgpu_region) */
  uint32_t max_devices; /* VGPU_REGION_MAX_DEVICES */
  uint32_t max_procs;   /* VGPU_REGION_MAX_PROCS */
  uint32_t
      device_count;        /* atomic; records [0, device_count) are valid; never above max_devices
                              (a reader clamps what it reads: the file is the container's to scribble) */
  uint32_t flags;          /* atomic; VGPU_REGION_FLAG_* */
  uint64_t created_unix_s; /* wall-clock seconds when the file was created */
  uint64_t reserved[16];
};

struct vgpu_region {
  struct vgpu_region_header header;
  struct vgpu_region_device devices[VGPU_REGION_MAX_DEVICES];
  struct vgpu_region_proc procs[VGPU_REGION_MAX_PROCS];
};

#ifdef __cplusplus
}
#endif

#endif /* VGPU_REGION_LAYOUT_H_ */
