#pragma once

// When the sampled mode calibrates its scale again while CUPTI is detached (sampler.cpp). Pure
// functions; table-tested (tests/libvgpu/sm/calibration_test.cpp).
//
// Far below its limit a tenant is measured with CUDA events, scaled by the records/events ratio of
// its last calibration window (100 ms of kernel records, plus a tail). Each window attaches CUPTI
// again, which stalls a launching thread 3-6 ms and costs every launch ~0.5 µs while attached (and
// ~1 µs more with the kernel kind on): for a launch-heavy loop a window costs ~25 ms of its time.
// So windows come every kCalibrateMinNs at first, and the spacing doubles, up to kCalibrateMaxNs,
// each time a window found the same scale again (within kScaleAgrees). A changed scale brings it
// back to kCalibrateMinNs. A change of the work that the events see (WorkMoved) opens a window
// kMovedCalibrateNs after the last one, whatever the spacing: the scale may be stale.

#include <stdint.h>

namespace vgpu::sm {

constexpr int64_t kCalibrateMinNs = 10'000'000'000;
constexpr int64_t kCalibrateMaxNs = 60'000'000'000;
constexpr int64_t kMovedCalibrateNs = 5'000'000'000;
constexpr double kScaleAgrees = 0.15;
constexpr double kMoved = 1.5;

// The work's signature while CUPTI is detached: EWMAs over ~1 s (sampler.cpp).
struct WorkSignature {
  double event_usage;       // event-measured share of the GPU
  double event_per_launch;  // event-measured ns per launch
  double launch_rate;       // launches per second
  double sync_fraction;     // share of the running time spent in the app's synchronisations
};

// The work changed since the calibration `then` in a way that can make its scale too small: more
// event-measured time, per launch or per second, more launches, or more of its time waiting for
// the GPU. (Less of any of them leaves the old scale conservative.)
inline bool WorkMoved(const WorkSignature& now, const WorkSignature& then) {
  return now.event_usage > kMoved * then.event_usage + 0.05 ||
         now.event_per_launch > kMoved * then.event_per_launch + 1000.0 ||
         now.launch_rate > kMoved * then.launch_rate + 100.0 ||
         now.sync_fraction > then.sync_fraction + 0.2;
}

// A window's ratio `found` confirms the scale `had` (both kernel-busy per event-measured time).
inline bool ScaleAgrees(double had, double found) {
  const double diff = found > had ? found - had : had - found;
  return had > 0 && diff <= kScaleAgrees * had;
}

// The spacing of detached windows after one that did (`agreed`) or did not confirm the scale.
inline int64_t NextCalibrationSpacing(int64_t spacing, bool agreed) {
  if (!agreed || spacing < kCalibrateMinNs) return kCalibrateMinNs;
  return spacing >= kCalibrateMaxNs / 2 ? kCalibrateMaxNs : 2 * spacing;
}

}  // namespace vgpu::sm
