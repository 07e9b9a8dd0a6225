#pragma once

// Pure decisions of the launch path, kept apart from the driver calls so that tables of cases can
// pin them down: when to record a timing event, when a stream has too much unmeasured work
// queued, and the per-launch cost estimate.

#include <stdint.h>

#include <algorithm>

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

// The steady state of a launch-bound loop needs none of the full launch path: between two event
// polls nothing it decides can come out differently. So after a launch through the full path, the
// same thread may send further launches onto the same stream past it (the "fast pass": no lock, no
// poll, no lease call, a few cache lines) for as many launches and as long as
//   - no end event falls due (ShouldRecordEnd: the launches a quantum of estimated work holds, and
//     a quantum of host time since the batch's first launch),
//   - the queue bound cannot be reached (QueueFull with the fast launches' estimated work added),
//   - the full path's next event poll and lease extension are not due.
// The fast pass itself still checks the budget, the device, the stream and that the app did not
// pause (a pause may open a new interval). Launch counts are folded into the stream's batch by the
// next full pass, so every decision after it sees them.
struct FastWindowInput {
  int64_t now_ns;
  int64_t est_per_launch_ns;    // 0: unknown (every launch records an event: no window)
  uint32_t unrecorded;          // launches of the open batch, this one included
  int64_t first_unrecorded_ns;  // host time of the batch's first launch
  uint32_t end_marks;           // outstanding end events of the stream
  uint32_t marks;               // all outstanding events of the stream
  int64_t outstanding_est_ns;   // estimated work queued on the stream (open batch included)
  int64_t poll_due_ns;          // the full path's next event poll
  int64_t extend_due_ns;        // its next lease extension
};

struct FastWindow {
  uint32_t launches = 0;  // 0: no fast pass, the next launch takes the full path
  int64_t until_ns = 0;   // launches from this time on take the full path
};

inline FastWindow FastWindowAfterLaunch(const AccountingParams& p, const FastWindowInput& in) {
  constexpr int64_t kMaxLaunches = 1 << 16;
  const int64_t est = in.est_per_launch_ns;
  // Close to a full ring the full path polls at every launch.
  if (est <= 0 || in.marks + 3 >= p.max_marks) {
    return {};
  }
  int64_t launches = (p.record_quantum_ns - 1) / est - static_cast<int64_t>(in.unrecorded);
  if (in.end_marks >= 2) {
    launches = std::min(launches, (p.queue_bound_ns - 1 - in.outstanding_est_ns) / est);
  }
  if (launches <= 0) {
    return {};
  }
  launches = std::min(launches, kMaxLaunches);
  const int64_t until =
      std::min({(in.unrecorded > 0 ? in.first_unrecorded_ns : in.now_ns) + p.record_quantum_ns,
                in.poll_due_ns, in.extend_due_ns});
  if (until <= in.now_ns) {
    return {};
  }
  return {static_cast<uint32_t>(launches), until};
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
