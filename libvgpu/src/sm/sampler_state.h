#pragma once

// The measuring thread's state, grouped by who may touch it, and the functions its files share
// (sampler.cpp: the thread and its passes; tick.cpp: one device's pass; measure.cpp: how GPU time
// is measured; calibration_windows.cpp: the sampled mode's windows; cupti_attach.cpp: CUPTI's
// attachment). Not part of the module's interface (sm_limit.h), nor of what the launch path sees
// (limiter.h). Design: docs/sm-limit.md, step 3.

#include <pthread.h>
#include <stdint.h>

#include "device.h"
#include "kernel_records.h"
#include "limiter.h"
#include "tunables.h"

namespace vgpu::sm::measuring {

// ---- Who may touch what
// --------------------------------------------------------------------------

// Starting and stopping the thread: any thread (a launching thread starts it, the exiting thread
// stops it), always under `mu`; `stop` is also read by the thread itself (atomic). A fork child
// starts over (SamplerAfterFork).
struct Lifecycle {
  pthread_mutex_t mu;
  bool started;
  bool stop;  // atomic
  pthread_t thread;
};

// What the thread publishes: written by the measuring thread only, read by any thread with atomic
// loads (vgpu_sm_get_stats, the exit report).
struct Published {
  Measure measure;         // atomic: how GPU time is measured now
  uint64_t passes;         // atomic
  uint64_t flushes;        // atomic
  uint64_t windows;        // atomic
  uint64_t windows_moved;  // atomic
  uint64_t rescaled;       // atomic
  uint64_t thread_cpu_ns;  // atomic: the thread's CPU, read every kCpuSampleEveryPasses passes
};

// Everything below is the measuring thread's alone: plain reads and writes, no lock. (The fork
// child, where the thread does not exist, resets some of it in SamplerAfterFork.)

// How the thread paces itself, and the process's launching time.
struct Pace {
  // The process's launching time (passes that found it launching, its pauses left out): windows
  // are spaced in it, so that a tenant that launches a quarter of the time is not calibrated four
  // times as often per unit of its work (each window costs a launch-heavy process ~25 ms).
  int64_t launching_ns;
  int64_t last_pass_ns;
  bool was_active;            // some device launched at the last pass
  int64_t awake_since_ns;     // since then, passes found launches without a pause
  uint64_t launches_at_pass;  // the devices' launches at the last pass (coasting)
  int64_t rate_since_ns;      // the launch rate's current stretch began then
  uint64_t rate_launches;     //   with the devices' launches at that time
};

// The watch on CUPTI's deliveries while the kernel kind is on (kSilentLaunchingNs).
struct SilenceWatch {
  int64_t since_launching_ns;  // Pace::launching_ns when the watch (re)started; -1: kind off
  uint64_t launches;           // the devices' launches then
  uint64_t deliveries;         // buffers CUPTI had handed back then
  int strikes;                 // silences since CUPTI last delivered
};

// CUPTI as the thread uses it (kernel_records.h holds CUPTI's own state).
struct CuptiUse {
  bool ok;            // kernel records can be had (started, not taken, not given up)
  bool tried;         // the one start was tried
  bool warned_taken;  // the application's takeover was reported
  int64_t last_flush_ns;
  SilenceWatch silence;
};

// Why records are needed, across the process's enforced tenants (measure.cpp ChooseMeasure).
struct Needs {
  int64_t records_needed_ns;  // records were last needed then
  int64_t near_ns;            // some enforced tenant's usage was near its limit then
  bool moved;                 // some tenant's work changed since its last calibration
};

// The sampled mode's calibration windows (calibration_windows.cpp).
struct Windows {
  int64_t start_ns;                    // the current or last window's start
  int64_t launching_ns_at_open;        // Pace::launching_ns when the last window opened
  int64_t launching_ns_at_moved_open;  // ... when the last window for a change of work opened
                                       // (-1: none yet)
  bool open;                           // the kernel kind is on for a window
  bool collecting;                     // its records are still coming in (open, or the tail)
  bool detached;                       // it was opened while CUPTI may stay detached
  int64_t calibrate_every_ns;          // detached windows' spacing (calibration.h)
};

// VGPU_SM_STATS=2 (Trace): what the last trace lines said, so that only changes are written.
struct TraceState {
  int64_t origin_ns;
  int traced_measure;
  bool traced_attached;
};

struct ThreadOwn {
  Pace pace;
  CuptiUse cupti;
  Needs needs;
  Windows windows;
  TraceState trace;
};

// The thread's scratch for one pass (one thread: plain statics).
struct Scratch {
  TimeSpan events[kScratch];
  KernelRecord records[kScratch];
  TimeSpan mine[kScratch];
  OwnedSpan others[kScratch];
  SpanEdge edges[4 * kScratch];
};

extern Lifecycle g_life;
extern Published g_published;
extern ThreadOwn g_own;
extern Scratch g_scratch;

// ---- Shared helpers (sampler.cpp) ---------------------------------------------------------------

inline bool Limited(const Device& d) {
  return __atomic_load_n(&d.state, __ATOMIC_ACQUIRE) == kStateLimited;
}

// The node monitor lifted the device's limit (policy default, the container alone on the GPU).
inline bool Lifted(const Device& d) {
  return d.policy != kPolicyForce &&
         __atomic_load_n(d.sharing, __ATOMIC_RELAXED) == VGPU_SM_SHARING_ALONE;
}

// Another tenant of the GPU was active within kOthersMemoryNs of `now`.
inline bool OthersActive(const MeterState& m, int64_t now) {
  return m.others_seen_ns != 0 && now - m.others_seen_ns < kOthersMemoryNs;
}

// VGPU_SM_STATS=2: one stderr line at each change of how the process is measured.
__attribute__((format(printf, 1, 2))) void Trace(const char* format, ...);

// The exit handler that stops the thread (registered again once CUPTI started: see
// cupti_attach.cpp).
void StopAtExit();

// ---- One device's pass (tick.cpp) ---------------------------------------------------------------

// What the sampled mode's calibration window counts now: events and launches while the kernel kind
// is on (the window, after its first kWindowSkipNs), and until they have all arrived (window +
// tail) records of the kernels that ran meanwhile, [records_from, records_to) of GPU time (the
// kind is on from the skip, so kernels queued before the window are recorded too): in steady work
// as many ran then as were launched meanwhile. (Records of the kernels launched meanwhile charged
// a fake tenant 43 µs per 40-µs kernel: the skip's queued ones came in.)
struct WindowCounts {
  bool events;
  bool records;
  int64_t records_from;
  int64_t records_to;
};

void Tick(Device& d, int64_t now, Measure measure, WindowCounts window, bool final);

// ---- Measuring (measure.cpp) --------------------------------------------------------------------

// The process-wide choice of measure (device.h Measure).
Measure ChooseMeasure(int64_t now);
// Hands the records CUPTI delivered to their devices, and publishes them to the other tenants.
void DistributeRecords(int64_t now, bool publish);

// The CUDA events one pass found completed on a device.
struct PolledEvents {
  int64_t busy_ns;
  int n;  // spans in g_scratch.events
};
PolledEvents PollEvents(Device& d, int64_t now);

// What a pass measured on a device: charged to its budget, its own busy time, the part of it
// shared with other tenants.
struct Measured {
  int64_t charged;
  int64_t busy;
  int64_t shared;
};
Measured MeasurePass(Device& d, int64_t now, Measure measure, WindowCounts window, bool final,
                     bool others, PolledEvents events, uint64_t launched);

// ---- Calibration windows (calibration_windows.cpp) ----------------------------------------------

// What a calibration period found: too little GPU time to tell (nothing changes), that the scale
// it had still holds (calibration.h ScaleHolds), or that it undercharged.
enum class Calibrated { kNothing, kSame, kChanged };

bool Moved(const MeterState& m);
void NoteRatio(MeterState& m, int64_t records_ns, int64_t events_ns, uint64_t launches);
Calibrated FinishRatio(MeterState& m, bool window);
// Opens a window when one is due, turns the kernel kind off after it and finishes it once its
// records are in (sampled mode; `detach`: CUPTI may stay detached). What the window counts now.
WindowCounts DriveWindows(int64_t now, bool detach);
// No window any more (records mode, CUPTI given up, no limit enforced).
inline void CloseWindows() {
  g_own.windows.open = false;
  g_own.windows.collecting = false;
}

// ---- CUPTI's attachment (cupti_attach.cpp) ------------------------------------------------------

// Starts CUPTI once, and notices an application that took it: whether kernel records can be had.
bool CuptiUsable();
// Whether CUPTI may be detached now: no records needed and every enforced tenant far below its
// limit, for a while.
bool MayDetach(int64_t now);
// Turns CUPTI's kernel kind on and off for the measure (sampled mode: windows), attaches and
// detaches CUPTI (kernel_records.h), and flushes it.
WindowCounts DriveCupti(Measure measure, int64_t now);
// No limit is enforced now: records off, and CUPTI detached once it may be.
void RelaxCupti(int64_t now);
// CUPTI took the kernel kind and hands nothing back (kSilentLaunchingNs). `launches`: the devices'
// launches so far.
void WatchForSilence(uint64_t launches);
// VGPU_SM_STATS=2: traces CUPTI's attachment when it changed.
void TraceAttachment();

}  // namespace vgpu::sm::measuring
