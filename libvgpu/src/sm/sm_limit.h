#pragma once

/* The SM (compute) limiter: the module's interface to the rest of libvgpu. Design and semantics:
 * docs/sm-limit.md.
 *
 * libvgpu hands the limiter its settings once (vgpu_sm_init: sm_attach.c, from the one parser of
 * the environment, env_config.h) together with the real driver's functions and where the
 * container's per-device state lives in its region. The launch, sync and capture hooks then call
 * the hook points below (vgpu_limiter_*), which this module implements. In a process without any
 * SM limit every hook is one load and one predictable branch: no clock read, no shared-memory
 * write, no syscall. */

#include <cuda.h>
#include <stdint.h>

#include "vgpu/region_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct VgpuSmDriver {
  CUresult (*ctx_get_device)(CUdevice* device);
  CUresult (*ctx_get_current)(CUcontext* context);
  CUresult (*ctx_set_current)(CUcontext context);
  /* Optional (NULL: never capturing); asked only while a capture is in progress. */
  CUresult (*stream_is_capturing)(CUstream stream, CUstreamCaptureStatus* status);
  CUresult (*device_get_uuid)(CUuuid* uuid, CUdevice device);
  CUresult (*event_create)(CUevent* event, unsigned int flags);
  CUresult (*event_record)(CUevent event, CUstream stream);
  CUresult (*event_query)(CUevent event);
  CUresult (*event_elapsed_time)(float* ms, CUevent start, CUevent end);
  CUresult (*event_destroy)(CUevent event);
} VgpuSmDriver;

typedef struct VgpuSmConfig {
  int device_count;                         /* CUDA ordinals described */
  int32_t percent[VGPU_REGION_MAX_DEVICES]; /* 1..99 limited; 0 unlimited (policy disable too) */
  int32_t policy;                           /* VGPU_SM_POLICY_* (vgpu/region_layout.h) */
  int32_t priority;                         /* 0 high, 1 low */
  int32_t stats;                            /* VGPU_SM_STATS level */
  int32_t alone_pause_ms;                   /* VGPU_SM_ALONE_PAUSE_MS */
  /* The container's region, and per CUDA ordinal the index of its device record (-1: none; the
   * budget is then this process's own). */
  struct vgpu_region* region;
  int32_t region_device[VGPU_REGION_MAX_DEVICES];
  /* This process's slot in the region (read when per-process usage is written: a fork child
   * claims its own). */
  const int* region_slot;
  char lock_dir[256];
  char cupti_library[512];
} VgpuSmConfig;

/* Takes the settings and the driver; cheap (no files, no threads: those come with the first
 * limited launch). The first call wins. */
void vgpu_sm_init(const VgpuSmDriver* driver, const VgpuSmConfig* config);

/* Non-zero once vgpu_sm_init found a limit on some device: the launch hooks' one branch. */
extern int vgpu_sm_any_limited;

/* Statistics of this process's limiter for CUDA ordinal `device` (tests, the exit report). */
#define VGPU_SM_REPORTED_WINDOW_RATIOS 8
typedef struct VgpuSmStats {
  int32_t percent;     /* the limit, 0 = unlimited */
  int32_t measure;     /* how the GPU time is measured now: 0 events, 1 kernel records, 2 sampled */
  uint64_t launches;   /* launches through the limiter */
  uint64_t busy_ns;    /* own kernel-busy time measured (before the split with other tenants) */
  uint64_t charged_ns; /* GPU time charged to the budget */
  uint64_t shared_ns;  /* part of busy_ns when other tenants' kernels were busy too */
  uint64_t throttled_ns;       /* time launches waited for budget (not counting turns) */
  uint64_t budget_waits;       /* launches that waited */
  uint64_t max_wait_ns;        /* the longest single wait (budget or turn) */
  uint64_t pauses;             /* budget waits in the alone rhythm's pause (budget.h) */
  uint64_t turn_waits;         /* launches that waited for their turn only (turns.h) */
  uint64_t turn_wait_ns;       /* how long they waited */
  uint64_t sync_ns;            /* time the app spent in sync calls (cuStreamSynchronize ...) */
  uint64_t events;             /* CUDA events recorded */
  uint64_t records;            /* kernel records received */
  uint64_t dropped;            /* kernel records lost (CUPTI's buffers full) */
  uint64_t measuring_cpu_ns;   /* CPU the process's measuring thread used (all devices) */
  uint64_t measuring_passes;   /* its passes over the devices */
  uint64_t cupti_flushes;      /* cuptiActivityFlushAll calls it made */
  uint64_t cupti_attaches;     /* times it attached CUPTI (process-wide; kernel_records.h) */
  uint64_t cupti_attached_ns;  /* how long CUPTI was attached (process-wide) */
  uint64_t cupti_buffers;      /* buffers CUPTI handed back (process-wide) */
  uint64_t cupti_buffers_lent; /* buffers CUPTI holds now (process-wide) */
  uint64_t records_unusable;   /* kernel records skipped: no start before their end */
  uint64_t windows;            /* calibration windows of the sampled mode (process-wide) */
  uint64_t windows_moved;      /* of them, opened early: the work changed (calibration.h) */
  uint64_t windows_rescaled;   /* of them, finding that the scale undercharged (calibration.h) */
  uint64_t coasted;            /* launches that passed unchecked while far below the limit */
  double scale;              /* sampled mode's kernel-busy per event-measured time now (-1: none) */
  double busy_per_launch_ns; /* and per launch (-1: none) */
  int32_t n_window_ratios;   /* how many of window_ratios hold a value */
  double window_ratios[VGPU_SM_REPORTED_WINDOW_RATIOS]; /* what the first windows found, in order */
} VgpuSmStats;
int vgpu_sm_get_stats(int device, VgpuSmStats* out);

/* Stops the measuring thread (before the driver is torn down at exit; tests). */
void vgpu_sm_shutdown(void);

/* ---- Hook points. Every launch hook of libvgpu (cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, cuGraphLaunch, each with _ptsz) calls vgpu_limiter_before_launch()
 * before handing the launch to the driver and vgpu_limiter_after_launch() after it; before_launch
 * may wait (the container's budget is in debt). In a process without an SM limit each is one load
 * and one predictable branch. */

/* What the limiter needs of a launch: the stream it goes to. */
struct vgpu_launch {
  CUstream stream;
  int per_thread_stream; /* the _ptsz variant was called */
};

/* Returns CUDA_SUCCESS to let the launch proceed, or an error the launch hook returns as is. */
CUresult vgpu_limiter_before_launch(const struct vgpu_launch* launch);
void vgpu_limiter_after_launch(const struct vgpu_launch* launch, CUresult result);

/* A stream capture began / an active one ended (launches into it are recorded into a graph, not
 * run): reported by libvgpu's cuStreamBeginCapture* and cuStreamEndCapture hooks. */
void vgpu_limiter_capture_begun(void);
void vgpu_limiter_capture_ended(void);
/* The application is about to wait for the GPU: reported by libvgpu's cuStreamSynchronize*,
 * cuCtxSynchronize* and cuEventSynchronize hooks. */
void vgpu_limiter_before_sync(void);
/* ... and its wait ended (same thread; how long it waited tells a GPU-bound tenant). */
void vgpu_limiter_after_sync(void);

#ifdef __cplusplus
} /* extern "C" */
#endif
