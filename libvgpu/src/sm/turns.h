#pragma once

// Turns among GPU-bound tenants. Pure functions; table-tested (tests/libvgpu/sm/turns_test.cpp).
//
// Two tenants that both keep the GPU busy are time-sliced by it, and every switch between their
// contexts costs GPU time that nobody ran: on an H100 two saturating matmul loops lost 9-12 % of
// the GPU that way, so limits that add up to 100 could not all be met (30 + 70 gave 24 + 67).
// Tenants that spend most of their running time waiting for the GPU (in cuStreamSynchronize and
// the like) therefore take turns: a period of kTurnPeriodNs on CLOCK_MONOTONIC (the same clock in
// every container of the node) is cut into one window per such tenant, in the order of their
// slots in the GPU's file, each as long as its share of the members' limits, and a member launches
// only inside its own window. The switches drop from one every ~2 ms slice to one per window. The
// budget (budget.h) still decides how much each gets; the windows only keep the GPU-bound tenants
// from running side by side. Host-bound tenants (a training loop with host gaps, a service) never
// take turns: the hardware's time slicing already lets them overlap their host time with the
// others' kernels, which turns would forbid.

#include <stdint.h>

namespace vgpu::sm {

constexpr int64_t kTurnPeriodNs = 100'000'000;

struct TurnWindow {
  int64_t offset_ns;  // where in the period the window opens
  int64_t length_ns;  // 0: no turns (launch whenever the budget allows)
};

// The members of the GPU's turn set as one member sees them: how many there are, the sum of their
// limits, and the sum of the limits of the members before this one (slot order).
struct TurnSet {
  int members;
  int32_t sum_percent;
  int32_t prefix_percent;
  bool includes_me;
};

inline TurnWindow TurnWindowFor(const TurnSet& set, int32_t my_percent) {
  if (!set.includes_me || set.members < 2 || my_percent <= 0 || set.sum_percent < my_percent ||
      set.prefix_percent < 0 || set.prefix_percent + my_percent > set.sum_percent)
    return TurnWindow{0, 0};
  return TurnWindow{kTurnPeriodNs * set.prefix_percent / set.sum_percent,
                    kTurnPeriodNs * my_percent / set.sum_percent};
}

// The earliest time at or after `at` that lies inside the window (`at` itself when there are no
// turns).
inline int64_t TurnStartAtNs(int64_t at, TurnWindow w) {
  if (w.length_ns <= 0) return at;
  int64_t phase = (at - w.offset_ns) % kTurnPeriodNs;
  if (phase < 0) phase += kTurnPeriodNs;
  return phase < w.length_ns ? at : at - phase + kTurnPeriodNs;
}

// The window travels from the measuring thread to the launch path in one atomic word (µs each).
inline int64_t PackTurn(TurnWindow w) {
  if (w.length_ns <= 0) return 0;
  return ((w.offset_ns / 1000) << 32) | (w.length_ns / 1000);
}

inline TurnWindow UnpackTurn(int64_t packed) {
  return TurnWindow{(packed >> 32) * 1000, (packed & 0xffffffff) * 1000};
}

// GPU-bound: the tenant spent at least 75 % of its running time (time not spent waiting for
// budget or for its turn) waiting for the GPU; it stays one down to 60 %, so that it does not
// flicker in and out of the turns. `sync_sum` and `running_sum` decay alike (tick.cpp).
inline bool GpuBound(bool was, double sync_sum, double running_sum) {
  constexpr double kMinRunningNs = 50e6;
  if (running_sum < kMinRunningNs) return false;
  const double fraction = sync_sum / running_sum;
  return was ? fraction >= 0.6 : fraction >= 0.75;
}

}  // namespace vgpu::sm
