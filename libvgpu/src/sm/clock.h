#pragma once

// The limiter's one clock (CLOCK_MONOTONIC, the clock of the region's budget and of the kernel
// records, see kernel_records.h) and its one way to wait.

#include <stdint.h>
#include <time.h>

namespace vgpu::sm {

inline int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline void SleepNs(int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

// Waits until `deadline_of()` (re-read after every step, since what it depends on moves while we
// sleep) has passed or `stop()` holds, sleeping at most `step_ns` at a time with no lock held.
// Returns the time it returned at.
template <typename Deadline, typename Stop>
int64_t WaitUntil(Deadline deadline_of, Stop stop, int64_t step_ns) {
  for (;;) {
    const int64_t now = NowNs();
    const int64_t deadline = deadline_of(now);
    if (deadline <= now || stop()) return now;
    SleepNs(deadline - now < step_ns ? deadline - now : step_ns);
  }
}

}  // namespace vgpu::sm
