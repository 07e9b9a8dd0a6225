#pragma once

// What the launch path (limiter.cpp) and the measuring thread (sampler.cpp) share inside the
// module. Not part of the module's interface (sm_limit.h, launch_limiter.h).

#include "device.h"
#include "sm_limit.h"

namespace vgpu::sm {

constexpr int kMaxDevices = VGPU_REGION_MAX_DEVICES;

extern Device g_devices[kMaxDevices];
extern VgpuSmDriver g_driver;
extern VgpuSmConfig g_config;

// Points the device's container-wide numbers (the monitor's flag, the budget, the busy, charged
// and throttled totals) at its record in the container's region.
void BindRecord(Device& d, vgpu_region_device& record);

// Stream captures in progress in the process (libvgpu's capture hooks count them).
bool CapturesActive();

// One stderr line, "[vgpu sm-limit] <message>".
void Warn(const char* message);

// The measuring thread: started with the first limited launch, woken by launches after it went
// idle, stopped at exit.
void SamplerStart();
void SamplerWake();
extern int g_sampler_idle;  // atomic: the thread sleeps until a launch wakes it
void SamplerStop();
void SamplerAfterFork();
Measure CurrentMeasure();
// What the measuring thread has cost so far (process-wide; statistics).
struct MeasuringCost {
  uint64_t cpu_ns;
  uint64_t passes;
  uint64_t flushes;
  uint64_t windows;   // calibration windows of the sampled mode
  uint64_t moved;     // of them, opened early because the work changed (calibration.h WorkMoved)
  uint64_t rescaled;  // of them, finding that the scale undercharged (calibration.h ScaleHolds)
};
MeasuringCost CurrentMeasuringCost();

// Coasting: while every enforced tenant of the process is far below its limit with CUPTI detached
// and none takes turns (the measuring thread's 8-ms rhythm), a launching thread checks one launch
// in `every` onto the stream it keeps launching onto; the others pass with a flag read (launch
// path, limiter.cpp). The thread bumps `epoch` when a pass found no launch since the last one
// (the app paused): a launch after a pause is checked again. Written by the measuring thread only.
struct Coast {
  int32_t every;   // atomic: 0 = check every launch
  uint32_t epoch;  // atomic
};
extern Coast g_coast;
// One in 32: a checked launch costs a launch-bound PyTorch loop ~150 ns (clock, budget, stream
// bookkeeping), coasting ones a few loads; the loop synchronises every few hundred launches, and
// each sync's next launch is checked anyway. Debt, impossible while coasting (every tenant below
// 75 % of its limit), would be seen at most 31 launches late.
constexpr int32_t kCoastEvery = 32;
// Whether launches coast now (the measuring thread's last pass let them): end marks are then spaced
// kCoastingMarkIntervalNs apart (event_marks.h).
inline bool LaunchesCoast() {
  return __atomic_load_n(&g_coast.every, __ATOMIC_RELAXED) > 1;
}
// Adds the launches that coasted on the calling thread since its last checked one to their device
// (a thread that coasted counts its own at its next checked launch, its next sync, or its exit; the
// exiting process's thread calls this before the statistics are taken).
void CountThreadCoasted();

// VGPU_SM_STATS: one line per limited device on stderr (at exit).
void ReportStats();

// Charges `gpu_ns` of GPU time (measured `busy_ns`) to the device's budget and counters.
void Charge(Device& d, int64_t gpu_ns, int64_t busy_ns, int64_t now);

}  // namespace vgpu::sm
