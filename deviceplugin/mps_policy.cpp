#include "deviceplugin/mps_policy.h"

#include <algorithm>

namespace vgpu::deviceplugin {

std::chrono::milliseconds MpsRestartDelay(int failures, const MpsBackoff& b) {
  if (failures <= 1) return std::chrono::milliseconds(0);
  std::chrono::milliseconds d = b.first;
  for (int i = 2; i < failures && d < b.max; ++i) d *= 2;
  return std::min(d, b.max);
}

bool MpsStartDue(const MpsDaemonState& s, MpsDaemonState::Clock::time_point now) {
  return !s.up && now >= s.next_start;
}

namespace {

void Failed(MpsDaemonState& s, MpsDaemonState::Clock::time_point now, const MpsBackoff& b) {
  s.up = false;
  ++s.failures;
  s.next_start = now + MpsRestartDelay(s.failures, b);
}

}  // namespace

bool MpsOnCheck(MpsDaemonState& s, bool alive, MpsDaemonState::Clock::time_point now,
                const MpsBackoff& b) {
  if (!s.up) return false;  // down: only a start attempt changes that
  if (alive) {
    if (s.failures > 0 && now - s.up_since >= b.stable) s.failures = 0;
    return false;
  }
  Failed(s, now, b);
  return true;
}

bool MpsOnStart(MpsDaemonState& s, bool ok, MpsDaemonState::Clock::time_point now,
                const MpsBackoff& b) {
  const bool was = s.up;
  if (ok) {
    s.up = true;
    s.up_since = now;
  } else {
    Failed(s, now, b);
  }
  return s.up != was;
}

}  // namespace vgpu::deviceplugin
