#pragma once

// How the sampled mode charges a tenant while its kernel records are off, and when it calibrates
// again. Pure functions; table-tested (tests/libvgpu/sm/calibration_test.cpp).
//
// Far below its limit a tenant is charged the larger of two estimates (ChargeSampled): its
// event-measured time times the records/events ratio of its last calibration, and its launches
// times their kernel-busy time per launch then. Each calibration (a period of records mode, or a
// window: CUPTI's kernel kind on for a while, calibration_windows.cpp) measures both. Events follow
// kernels that grow longer; launches follow a loop that speeds up. For a host-bound training loop
// events cover nearly all the wall time (on an H200, 97-99 % of it at 15 steps/s held by its limit
// and at 23 steps/s free), so its records/events ratio is its busy fraction, and a ratio taken
// while the limit held it undercharged it by half once it ran free; its kernel time per launch
// stayed.
//
// Each window attaches CUPTI again, which stalls a launching thread 3-25 ms and costs every launch
// ~0.5 µs while attached (and ~1 µs more with the kernel kind on): for a launch-heavy loop a
// window costs ~25 ms of its time. So windows come every kCalibrateMinNs of the process's
// launching time (its pauses do not count) at first, and the spacing doubles, up to
// kCalibrateMaxNs, each time a window found that the scales in use did not undercharge the tenant:
// new ones at most kScaleMargin above them. A lower one means the events were charged more than
// the kernels used, which only keeps a tenant that is far below its limit further below it (on an
// H200, 16 of 28 windows of steady PyTorch loops found a scale more than a quarter away from the
// last one, 2026-11-28). A higher one brings the spacing back to kCalibrateMinNs. A change of the
// work that the events or the launches show (WorkMoved) opens a window at once, at most one per
// kMovedCalibrateNs of launching: the scales may be stale (a PyTorch process detached CUPTI in its
// setup and its training loop was charged a fiftieth of its time until a window 5 s later).

#include <stdint.h>

namespace vgpu::sm {

constexpr int64_t kCalibrateMinNs = 10'000'000'000;
constexpr int64_t kCalibrateMaxNs = 60'000'000'000;
constexpr int64_t kMovedCalibrateNs = 5'000'000'000;
constexpr double kScaleMargin = 0.25;
constexpr double kMoved = 1.5;
// A calibration period says something only with this much of each measure: on an H200 a PyTorch
// process's first period, in its setup, saw 0.43 ms of kernels in 55 ms of events and 2 % became
// the scale its training loop was charged with (it ran at 43 % of the GPU limited to 30,
// 2026-11-29). Records mode keeps adding periods until it has enough.
constexpr int64_t kMinCalibrationEventsNs = 5'000'000;
constexpr int64_t kMinCalibrationRecordsNs = 2'000'000;
constexpr uint64_t kMinCalibrationLaunches = 20;

inline double Ewma(double old, double sample, int64_t dt_ns, int64_t tau_ns) {
  if (dt_ns <= 0) return old;
  const double alpha = static_cast<double>(dt_ns) / static_cast<double>(dt_ns + tau_ns);
  return old + alpha * (sample - old);
}

// An EWMA that starts as the plain mean of its first `tau_ns` of samples (`seen_ns` of them so
// far) instead of rising from 0: the work's signature is taken at the first calibration, long
// before a plain EWMA of ~1 s has risen to the work's level (at 0.5 s it read 2/3 of it, and every
// later reading looked like a change of work).
inline double WarmEwma(double old, double sample, int64_t dt_ns, int64_t tau_ns, int64_t seen_ns) {
  if (dt_ns <= 0) return old;
  if (seen_ns + dt_ns >= tau_ns) return Ewma(old, sample, dt_ns, tau_ns);
  return old + static_cast<double>(dt_ns) / static_cast<double>(seen_ns + dt_ns) * (sample - old);
}

// The work's signature while CUPTI is detached: EWMAs over ~1 s of the time the app launched.
struct WorkSignature {
  double event_usage;       // event-measured share of the GPU
  double event_per_launch;  // event-measured ns per launch
  double launch_rate;       // launches per second
  double sync_fraction;     // share of the running time spent in the app's synchronisations
};

constexpr int64_t kSignatureTauNs = 1'000'000'000;
// Passes come every 2-8 ms while the app launches; a longer gap means the thread slept because
// the app launched nothing (an idle service, a tenant taking turns).
constexpr int64_t kResumedAfterNs = 50'000'000;

// One pass of the measuring thread: the time since the last one, the event-measured GPU time and
// the launches in it.
struct WorkSample {
  int64_t dt_ns;
  int64_t event_busy_ns;
  uint64_t launched;
};

// Folds a pass into the signature (`seen_ns`: how long it has averaged so far). The first pass
// after a sleep is left out: its launches over the whole pause read as a collapse of the launch
// rate, the work soon "grew by half" back to its level, and a calibration taken in between made
// every steady but intermittent tenant look changed (a window every 5 s, not 10-60 s). So are
// passes that saw neither a launch nor GPU time (the 300 ms before the thread sleeps): they say
// nothing about the work, only that it paused.
inline void NoteWork(WorkSignature& w, int64_t& seen_ns, const WorkSample& s) {
  if (s.dt_ns <= 0 || s.dt_ns > kResumedAfterNs) return;
  if (s.launched == 0 && s.event_busy_ns <= 0) return;
  const auto dt = static_cast<double>(s.dt_ns);
  const auto busy = static_cast<double>(s.event_busy_ns);
  w.event_usage = WarmEwma(w.event_usage, busy / dt, s.dt_ns, kSignatureTauNs, seen_ns);
  w.launch_rate = WarmEwma(w.launch_rate, static_cast<double>(s.launched) * 1e9 / dt, s.dt_ns,
                           kSignatureTauNs, seen_ns);
  if (s.launched > 0)
    w.event_per_launch = WarmEwma(w.event_per_launch, busy / static_cast<double>(s.launched),
                                  s.dt_ns, kSignatureTauNs, seen_ns);
  seen_ns += s.dt_ns;
}

// The work changed since the calibration `then` in a way that can make its scale too small: more
// event-measured time, per launch or per second, more launches, or more of its time waiting for
// the GPU. (Less of any of them leaves the old scale conservative.)
inline bool WorkMoved(const WorkSignature& now, const WorkSignature& then) {
  return now.event_usage > kMoved * then.event_usage + 0.05 ||
         now.event_per_launch > kMoved * then.event_per_launch + 1000.0 ||
         now.launch_rate > kMoved * then.launch_rate + 100.0 ||
         now.sync_fraction > then.sync_fraction + 0.2;
}

inline bool EnoughToCalibrate(int64_t records_ns, int64_t events_ns, uint64_t launches) {
  return records_ns >= kMinCalibrationRecordsNs && events_ns >= kMinCalibrationEventsNs &&
         launches >= kMinCalibrationLaunches;
}

// The sampled mode's scales: what a calibration found, kernel-busy time per event-measured time
// and per launch.
struct Scales {
  double per_event;
  double per_launch_ns;
};

// The sampled mode's two estimates over the current period, and what was charged of them.
struct SampledEstimate {
  int64_t from_ns;
  double by_events;
  double by_launches;
  int64_t charged_ns;
};

// Each estimate is summed over a period of kEstimatePeriodNs before the larger one is taken: a
// launch is counted when it is made and its events' time when its batch completed, a few passes
// later, so the larger of each pass's two counted the same kernels twice (a saturating fake tenant
// limited to 30 got 17 %). What a period's lag still counts twice is the queue at its end (a few
// ms in 250).
constexpr int64_t kEstimatePeriodNs = 250'000'000;

// What to charge for a pass at `now` that saw `event_busy_ns` of events and `launched` launches:
// the rise of the larger estimate of the period.
inline int64_t ChargeSampled(SampledEstimate& e, int64_t now, int64_t event_busy_ns,
                             uint64_t launched, const Scales& s) {
  if (now - e.from_ns >= kEstimatePeriodNs) e = SampledEstimate{now, 0.0, 0.0, 0};
  e.by_events += static_cast<double>(event_busy_ns) * s.per_event;
  e.by_launches += static_cast<double>(launched) * s.per_launch_ns;
  const auto larger =
      static_cast<int64_t>(e.by_events > e.by_launches ? e.by_events : e.by_launches);
  const int64_t charge = larger > e.charged_ns ? larger - e.charged_ns : 0;
  e.charged_ns += charge;
  return charge;
}

// A calibration's ratio `found` confirms the scale `had` (both kernel-busy per event-measured time,
// or both per launch): charging with `had` did not undercharge the tenant by more than
// kScaleMargin.
inline bool ScaleHolds(double had, double found) {
  return had > 0 && found <= (1.0 + kScaleMargin) * had;
}

// The scale after a calibration period (a window, or a period of records mode) found the ratio
// `found`, the scale in use being `had` (none yet: `has_scale` false). A window's is taken as
// found: on an H200 a PyTorch training loop limited to 30 % ran at 42 % of the GPU, judged far
// below its limit with a scale taken from its setup and moved only halfway by each window
// (2026-11-29), and a setup's heavier kernels per launch, moved halfway by each window, would
// overcharge the loop after it for as many windows. A period of records mode (250 ms: a few
// launches at its edges count in the next one) moves the scale halfway towards what it found,
// unless the scale undercharged by more than kScaleMargin: taking each period's higher value at
// once made the noise an overcharge (a saturating fake tenant at 70 was charged 6 % more than its
// kernels and got 66 %).
inline double NextScale(double had, bool has_scale, double found, bool window) {
  if (!has_scale || window || !ScaleHolds(had, found)) return found;
  return 0.5 * had + 0.5 * found;
}

// The spacing of detached windows after one that did (`agreed`) or did not confirm the scale.
inline int64_t NextCalibrationSpacing(int64_t spacing, bool agreed) {
  if (!agreed || spacing < kCalibrateMinNs) return kCalibrateMinNs;
  return spacing >= kCalibrateMaxNs / 2 ? kCalibrateMaxNs : 2 * spacing;
}

}  // namespace vgpu::sm
