/* The container's shared region: one mmap'ed file (layout in vgpu/region_layout.h) holding limits,
 * per-device usage totals and per-process slots. When the file cannot be used, a private anonymous
 * mapping stands in and the handle says why (vgpu_region_failure): the caller fails closed, as
 * processes that cannot share the container's limit could each take all of it. Everything read
 * from the file is untrusted (the container can write it): counts are clamped, locks waited for a
 * bounded time, sums saturate. */
#ifndef VGPU_REGION_H_
#define VGPU_REGION_H_

#include <stddef.h>
#include <stdint.h>

#include "mem_arith.h"
#include "vgpu/region_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

struct vgpu_region_handle {
  struct vgpu_region* region; /* NULL when not open */
  int fd;                     /* -1 for the private fallback */
  int is_private;             /* 1 when the file could not be used */
  int slot;                   /* this process's slot, -1 when none */
  int pid;                    /* pid that owns `slot` */
  const char* unusable_why;   /* why the file could not be used (then is_private), else NULL */
  uint32_t draining; /* devices on which the last reap left dead processes charged (bit d) */
};

/* Maps the region at `path` (created with mode 0666 when absent, laid out when empty). The file
 * must be a regular file with one name (a symbolic or hard link is refused, never followed). Any
 * problem with it maps a private region instead and sets `unusable_why`; nothing is printed.
 * Returns 0, or -1 only if no memory at all. */
int vgpu_region_open(const char* path, struct vgpu_region_handle* h);

/* Maps a private anonymous region (no file; shared with fork children only). */
int vgpu_region_open_private(struct vgpu_region_handle* h);

/* NULL while the region can be used; else why not: the file was unusable at open, or it was found
 * corrupt since (device count, header, a device lock glibc refuses; marked in the header with
 * VGPU_REGION_FLAG_UNUSABLE for the node monitor and the container's other processes). */
const char* vgpu_region_failure(const struct vgpu_region_handle* h);

/* Records [0, this) are valid (the header's count, clamped to the records that exist). */
uint32_t vgpu_region_device_count(const struct vgpu_region_handle* h);

/* A record's byte limit: VGPU_MEM_UNLIMITED (mem_arith.h) when it has none; 0 = no memory. */
uint64_t vgpu_region_limit(const struct vgpu_region_device* d);

/* Finds or adds the device record for `uuid`. `limit` (bytes, VGPU_MEM_UNLIMITED for none),
 * `sm_limit` and `sm_policy` (VGPU_SM_POLICY_*) are stored only when the record is created (the
 * container's first process fixes them; the node monitor shows them). Returns the record index or
 * -1 when full. */
int vgpu_region_register_device(struct vgpu_region_handle* h, const char* uuid, uint64_t physical,
                                uint64_t limit, uint32_t sm_limit, uint32_t sm_policy);

/* Claims a free slot for (pid, start_time); reaps dead slots first. Returns 0 or -1 when full. */
int vgpu_region_claim_slot(struct vgpu_region_handle* h, int pid, uint64_t start_time,
                           int priority);

/* Releases this process's slot (subtracting its usage), e.g. at exit. */
void vgpu_region_release_slot(struct vgpu_region_handle* h);

/* Reaps slots whose process is gone; with `check_start_time`, also slots whose pid was reused.
 * Returns the number of slots reaped. A dead process the drain probe still sees holding memory on
 * a device keeps its slot and charge (at most 5 s): `h->draining` has that device's bit. */
int vgpu_region_reap(struct vgpu_region_handle* h, int check_start_time);

/* 1 while the driver still lists process `nvml_pid` on the GPU `uuid` (its memory not yet freed),
 * 0 when it does not, -1 when it cannot tell (then the slot is reaped as before). */
typedef int (*vgpu_region_drain_probe)(const char* uuid, unsigned nvml_pid);
/* 1 when the last reap left a dead process charged on device `dev` (h->draining). */
int vgpu_region_draining(const struct vgpu_region_handle* h, int dev);
void vgpu_region_set_drain_probe(vgpu_region_drain_probe probe);

/* Atomic admission: adds `bytes` to device `dev` and to this process's slot when the total stays
 * within the limit. 0 on success, -1 when it would exceed the limit (nothing changed). */
int vgpu_region_reserve(struct vgpu_region_handle* h, int dev, uint64_t bytes);

/* As vgpu_region_reserve, for memory the driver is about to take for a context: counted as this
 * process's overhead (which the next measurement replaces). 0, or -1 over the limit. */
int vgpu_region_reserve_overhead(struct vgpu_region_handle* h, int dev, uint64_t bytes);
/* Takes back what vgpu_region_reserve_overhead added (the driver created nothing). */
void vgpu_region_release_overhead(struct vgpu_region_handle* h, int dev, uint64_t bytes);
/* The container's measured context footprint on `dev` (0: none yet), clamped; and noting one. */
uint64_t vgpu_region_context_hint(const struct vgpu_region_handle* h, int dev);
void vgpu_region_note_context(struct vgpu_region_handle* h, int dev, uint64_t bytes);
/* The container's first context on a device has no measured size to reserve: its creation is
 * serialised across the container's processes (the region file's flock) until one is measured.
 * 1 when held (release with vgpu_region_end_first_context), 0 for a private region. */
int vgpu_region_begin_first_context(struct vgpu_region_handle* h);
void vgpu_region_end_first_context(struct vgpu_region_handle* h);
uint64_t vgpu_region_slot_overhead(const struct vgpu_region_handle* h, int dev);

/* Undoes a reservation / accounts a free. Clamped at 0. */
void vgpu_region_release(struct vgpu_region_handle* h, int dev, uint64_t bytes);

/* Sets this process's measured overhead (context/module/pool memory) on `dev`, adjusting the
 * total; no limit check (the memory already exists). */
void vgpu_region_set_overhead(struct vgpu_region_handle* h, int dev, uint64_t bytes);

uint64_t vgpu_region_device_used(const struct vgpu_region_handle* h, int dev);
/* The slot owner's PID as NVML reports it: the host PID the node monitor matched to this very
 * process (same start_time), else `pid` itself (no PID namespace, or no monitor). */
unsigned vgpu_region_nvml_pid(const struct vgpu_region_proc* slot);
uint64_t vgpu_region_slot_used(const struct vgpu_region_handle* h, int dev);

/* Start time (field 22 of /proc/<pid>/stat); 0 on success, -1 if the process does not exist. */
int vgpu_proc_start_time(int pid, uint64_t* out);

/* Parses the start time out of the text of /proc/<pid>/stat (pure). */
int vgpu_parse_stat_start_time(const char* stat_text, uint64_t* out);

#ifdef __cplusplus
}
#endif

#endif
