#pragma once

// Pure decisions of the launch path, kept apart from the driver calls so that tables of cases can
// pin them down: when to record a timing event, when a stream has too much unmeasured work
// queued, and the per-launch cost estimate.

#include <stdint.h>

namespace vgpu::sm {

struct AccountingParams {
  // Record an event at least once per this much estimated GPU work or host time, so that one
  // event covers many tiny kernels (launch-heavy loops) but every large kernel gets its own.
  // (On an H100 an event record costs ~2 us of host time: at 1 ms it is ~0.2 % of a launch loop.)
  int64_t record_quantum_ns = 1'000'000;
  // A stream may keep at most this much estimated unmeasured work queued (and at least 2 marks'
  // worth), so that a deep queue cannot run far past a spent budget.
  int64_t queue_bound_ns = 2'000'000;
  uint32_t max_marks = 12;
};

// Should an end event be recorded after this launch? `est_per_launch_ns` == 0 means unknown.
inline bool ShouldRecordEnd(const AccountingParams& p, int64_t est_per_launch_ns,
                            uint32_t unrecorded_launches, int64_t since_first_unrecorded_ns) {
  if (unrecorded_launches == 0) return false;
  if (est_per_launch_ns <= 0) return true;
  if (static_cast<int64_t>(unrecorded_launches) * est_per_launch_ns >= p.record_quantum_ns)
    return true;
  return since_first_unrecorded_ns >= p.record_quantum_ns;
}

// Must the next launch wait for queued work to drain first? `end_marks` counts the outstanding
// events that close submitted work, `marks` all outstanding events of the stream. `shared`
// (other tenants wait for the GPU) caps the queue at two batches whatever their size.
inline bool QueueFull(const AccountingParams& p, uint32_t end_marks, uint32_t marks,
                      int64_t outstanding_est_ns, bool shared) {
  if (marks + 2 >= p.max_marks) return true;
  if (shared) return end_marks >= 2;
  return end_marks >= 2 && outstanding_est_ns >= p.queue_bound_ns;
}

// The part of a measured interval that was the limiter's own host time, not the tenant's: when the
// GPU waited on the host (a launch-bound stream: no measured work was still queued when the
// limiter last looked), every ns the launch hooks took between two launches stretched the
// interval, and an unlimited run would not have had it. `hook_ns` is the hooks' cost per launch.
// Never more than a quarter of the interval; nothing while the GPU had work queued (then the
// hooks ran in its shadow).
inline int64_t OwnOverheadNs(int64_t measured_ns, uint32_t launches, int64_t hook_ns,
                             bool gpu_waited_on_host) {
  if (!gpu_waited_on_host || measured_ns <= 0 || hook_ns <= 0) return 0;
  const int64_t own = static_cast<int64_t>(launches) * hook_ns;
  return own < measured_ns / 4 ? own : measured_ns / 4;
}

// Moving average of GPU time per launch on a stream (a 1/4 step keeps it responsive to a change
// of workload and steady under jitter). `est_ns` == 0 means no estimate yet.
inline int64_t UpdateEstimate(int64_t est_ns, int64_t measured_ns, uint32_t launches) {
  if (launches == 0 || measured_ns < 0) return est_ns;
  int64_t sample = measured_ns / launches;
  if (sample < 1) sample = 1;
  if (est_ns <= 0) return sample;
  return est_ns + (sample - est_ns) / 4;
}

}  // namespace vgpu::sm
