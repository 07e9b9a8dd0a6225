#pragma once

// Converting the simulated GPU times (CLOCK_MONOTONIC) to the clock CUPTI reports in:
// CLOCK_REALTIME by default, or the client's timestamp callback. Like the real CUPTI, which maps
// GPU timestamps to CPU time by sampling both, the offset between the clocks is sampled: one
// reading of the other clock between two readings of CLOCK_MONOTONIC bounds it.

#include <cstdint>

namespace vgpu::fake::cupti {

// The offset to add to a CLOCK_MONOTONIC time. The true offset lies in
// [other - mono_after, other - mono_before]; when that holds 0 the clocks cannot be told apart
// and 0 is taken, so that a client whose callback reads CLOCK_MONOTONIC gets the simulated times
// exactly; otherwise the middle.
inline int64_t ClockOffset(int64_t mono_before, int64_t other, int64_t mono_after) {
  const int64_t lo = other - mono_after;
  const int64_t hi = other - mono_before;
  if (lo <= 0 && hi >= 0) return 0;
  return lo + (hi - lo) / 2;
}

}  // namespace vgpu::fake::cupti
