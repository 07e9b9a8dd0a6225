// VGPU_SM_STATS=1: one stderr line per limited device when the process exits, to see where a
// limited process's time went. key=value pairs, so that scripts can read them.

#include <stdio.h>
#include <unistd.h>

#include "limiter.h"

namespace vgpu::sm {
namespace {

// snprintf into what is left of a buffer; the characters it added (none once the buffer is full).
template <typename... Args>
size_t Append(char* at, size_t left, const char* format, Args... args) {
  if (left <= 1) return 0;
  const int n = snprintf(at, left, format, args...);
  if (n <= 0) return 0;
  return static_cast<size_t>(n) < left ? static_cast<size_t>(n) : left - 1;
}

}  // namespace

void ReportStats() {
  for (int i = 0; i < kMaxDevices; ++i) {
    VgpuSmStats s{};
    if (vgpu_sm_get_stats(i, &s) != 0 || s.percent == 0) continue;
    char line[1024];
    const int n = snprintf(
        line, sizeof(line),
        "[vgpu sm-limit] pid=%d device=%d limit=%d measure=%s launches=%llu busy_ms=%.1f "
        "charged_ms=%.1f shared_ms=%.1f throttled_ms=%.1f waits=%llu max_wait_ms=%.1f "
        "pauses=%llu turn_waits=%llu turn_wait_ms=%.1f sync_ms=%.1f "
        "events=%llu records=%llu dropped=%llu measuring_cpu_ms=%.1f passes=%llu flushes=%llu "
        "attaches=%llu attached_ms=%.1f buffers=%llu lent=%llu unusable=%llu windows=%llu "
        "moved=%llu rescaled=%llu coasted=%llu",
        static_cast<int>(getpid()), i, s.percent, MeasureName(s.measure),
        static_cast<unsigned long long>(s.launches), static_cast<double>(s.busy_ns) / 1e6,
        static_cast<double>(s.charged_ns) / 1e6, static_cast<double>(s.shared_ns) / 1e6,
        static_cast<double>(s.throttled_ns) / 1e6, static_cast<unsigned long long>(s.budget_waits),
        static_cast<double>(s.max_wait_ns) / 1e6, static_cast<unsigned long long>(s.pauses),
        static_cast<unsigned long long>(s.turn_waits), static_cast<double>(s.turn_wait_ns) / 1e6,
        static_cast<double>(s.sync_ns) / 1e6, static_cast<unsigned long long>(s.events),
        static_cast<unsigned long long>(s.records), static_cast<unsigned long long>(s.dropped),
        static_cast<double>(s.measuring_cpu_ns) / 1e6,
        static_cast<unsigned long long>(s.measuring_passes),
        static_cast<unsigned long long>(s.cupti_flushes),
        static_cast<unsigned long long>(s.cupti_attaches),
        static_cast<double>(s.cupti_attached_ns) / 1e6,
        static_cast<unsigned long long>(s.cupti_buffers),
        static_cast<unsigned long long>(s.cupti_buffers_lent),
        static_cast<unsigned long long>(s.records_unusable),
        static_cast<unsigned long long>(s.windows),
        static_cast<unsigned long long>(s.windows_moved),
        static_cast<unsigned long long>(s.windows_rescaled),
        static_cast<unsigned long long>(s.coasted));
    if (n <= 0) continue;
    // The sampled mode's scales now and what the first calibration windows found, the numbers
    // that tell whether a tenant measured far below its limit was charged its kernels' time.
    size_t used = static_cast<size_t>(n) < sizeof(line) ? static_cast<size_t>(n) : sizeof(line) - 1;
    used +=
        Append(line + used, sizeof(line) - used, " scale=%.3f per_launch_us=%.2f ratios=", s.scale,
               s.busy_per_launch_ns < 0 ? -1.0 : s.busy_per_launch_ns / 1e3);
    for (int32_t w = 0; w < s.n_window_ratios && w < VGPU_SM_REPORTED_WINDOW_RATIOS; ++w)
      used +=
          Append(line + used, sizeof(line) - used, w == 0 ? "%.3f" : ",%.3f", s.window_ratios[w]);
    if (s.n_window_ratios == 0) used += Append(line + used, sizeof(line) - used, "-");
    if (used + 1 >= sizeof(line)) used = sizeof(line) - 2;
    line[used++] = '\n';
    const ssize_t ignored = write(2, line, used);
    (void)ignored;
  }
}

}  // namespace vgpu::sm
