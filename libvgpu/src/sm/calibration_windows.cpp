// The sampled mode's calibrations (docs/sm-limit.md, step 3, Calibration): what a period of
// kernel records found against the events and launches of the same time, and the windows that
// turn CUPTI's kernel kind on for a while to find it. The arithmetic is calibration.h's.

#include "clock.h"
#include "kernel_records.h"
#include "sampler_state.h"

namespace vgpu::sm::measuring {
namespace {

void ResetRatio(MeterState& m) {
  m.ratio_records_ns = 0;
  m.ratio_events_ns = 0;
  m.ratio_launches = 0;
}

// Opens a window when one is due (`detach`: CUPTI may stay detached, so detached windows are
// spaced by calibration.h; before, every kWindowEveryNs) or the work changed.
void OpenWindowIfDue(int64_t now, bool detach) {
  Windows& w = g_own.windows;
  const Pace& p = g_own.pace;
  const int64_t every = !detach ? kWindowEveryNs : w.calibrate_every_ns;
  // A window between detached stretches waits until the process has launched for a while since
  // the thread woke up: right after a pause the GPU may still run at a low clock (an idle H200
  // reads 345 MHz) and the first kernels need not show the work's scale, and in turns every
  // window opened at a resumption. Not when the work changed: its scales may be stale, and one
  // window opens at once (then at most one per kMovedCalibrateNs of launching).
  const bool settled = now - p.awake_since_ns >= kSettleBeforeWindowNs;
  const int64_t since_window = p.launching_ns - w.launching_ns_at_open;
  const bool moved_due =
      g_own.needs.moved && (w.launching_ns_at_moved_open < 0 ||
                            p.launching_ns - w.launching_ns_at_moved_open >= kMovedCalibrateNs);
  const bool due = since_window >= every && (!detach || settled);
  if (w.open || w.collecting || !(due || moved_due)) return;
  if (!due) {
    __atomic_fetch_add(&g_published.windows_moved, 1, __ATOMIC_RELAXED);
    w.launching_ns_at_moved_open = p.launching_ns;
  }
  __atomic_fetch_add(&g_published.windows, 1, __ATOMIC_RELAXED);
  Trace("window opens (%s): launching_s=%.1f since_last_s=%.1f", due ? "due" : "work moved",
        static_cast<double>(p.launching_ns) / 1e9, static_cast<double>(since_window) / 1e9);
  w.launching_ns_at_open = p.launching_ns;
  w.detached = detach;
  w.open = kernel_records::SetEnabled(true);
  w.collecting = w.open;
  // From when the kind is on (attaching took its time).
  w.start_ns = NowNs();
  for (Device& d : g_devices) ResetRatio(d.meter);
}

// Once a window's records are all in: every limited device's scales from what it found, and the
// spacing of the next detached window.
void FinishWindow() {
  Windows& w = g_own.windows;
  w.collecting = false;
  bool same = false;
  bool changed = false;
  for (Device& d : g_devices) {
    if (!Limited(d)) continue;
    const Calibrated found = FinishRatio(d.meter, true);
    same |= found == Calibrated::kSame;
    changed |= found == Calibrated::kChanged;
    Trace("window done: device=%d %s scale=%.3f per_launch_us=%.2f usage=%.3f", d.ordinal,
          found == Calibrated::kSame      ? "scale holds"
          : found == Calibrated::kChanged ? "rescaled"
                                          : "too little to tell",
          d.meter.scales.per_event, d.meter.scales.per_launch_ns / 1e3, d.meter.usage);
  }
  // Only windows between detached stretches space out (the 2-s windows before the first detach
  // all see the same few seconds of work), and not while the work changed.
  if (changed) __atomic_fetch_add(&g_published.rescaled, 1, __ATOMIC_RELAXED);
  if (same || changed)
    w.calibrate_every_ns = NextCalibrationSpacing(
        w.calibrate_every_ns, w.detached && same && !changed && !g_own.needs.moved);
}

}  // namespace

bool Moved(const MeterState& m) {
  return m.has_ratio && WorkMoved(m.work, m.calibrated);
}

// Sampled mode's scales: kernel-busy time over event-measured time and over launches in the same
// period.
void NoteRatio(MeterState& m, int64_t records_ns, int64_t events_ns, uint64_t launches) {
  m.ratio_records_ns += records_ns;
  m.ratio_events_ns += events_ns;
  m.ratio_launches += launches;
}

// Too little of either measure: a window is lost, a period of records mode goes on into the next.
Calibrated FinishRatio(MeterState& m, bool window) {
  if (!EnoughToCalibrate(m.ratio_records_ns, m.ratio_events_ns, m.ratio_launches)) {
    if (window) ResetRatio(m);
    return Calibrated::kNothing;
  }
  const auto records = static_cast<double>(m.ratio_records_ns);
  double r = records / static_cast<double>(m.ratio_events_ns);
  r = r < kMinEventScale ? kMinEventScale : (r > kMaxEventScale ? kMaxEventScale : r);
  const double per_launch = records / static_cast<double>(m.ratio_launches);
  const Calibrated found = m.has_ratio && ScaleHolds(m.scales.per_event, r) &&
                                   ScaleHolds(m.scales.per_launch_ns, per_launch)
                               ? Calibrated::kSame
                               : Calibrated::kChanged;
  // Not const: __atomic_store.
  double per_event = NextScale(m.scales.per_event, m.has_ratio, r, window);
  double per_launch_ns = NextScale(m.scales.per_launch_ns, m.has_ratio, per_launch, window);
  __atomic_store(&m.scales.per_event, &per_event, __ATOMIC_RELAXED);
  __atomic_store(&m.scales.per_launch_ns, &per_launch_ns, __ATOMIC_RELAXED);
  // Only this thread writes the count: a plain read of it is its own latest value.
  if (const int32_t n = m.n_window_ratios; window && n < kReportedWindowRatios) {
    __atomic_store(&m.window_ratios[n], &r, __ATOMIC_RELAXED);
    __atomic_store_n(&m.n_window_ratios, n + 1, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&m.has_ratio, true, __ATOMIC_RELAXED);
  m.calibrated = m.work;
  ResetRatio(m);
  return found;
}

WindowCounts DriveWindows(int64_t now, bool detach) {
  Windows& w = g_own.windows;
  OpenWindowIfDue(now, detach);
  // Records mode ended, or a window: the kind goes off outside windows.
  const int64_t in_window = now - w.start_ns;
  if (!w.collecting || (w.open && in_window >= kWindowSkipNs + kWindowNs)) {
    kernel_records::SetEnabled(false);
    w.open = false;
  }
  const bool counting = in_window >= kWindowSkipNs;
  const WindowCounts counts{w.open && counting, w.collecting && counting,
                            w.start_ns + kWindowSkipNs, w.start_ns + kWindowSkipNs + kWindowNs};
  if (w.collecting && !w.open && in_window >= kWindowSkipNs + kWindowNs + kWindowTailNs)
    FinishWindow();
  return counts;
}

}  // namespace vgpu::sm::measuring
