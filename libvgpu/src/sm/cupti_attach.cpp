// CUPTI as the measuring thread drives it (docs/sm-limit.md, step 3: Detaching CUPTI, CUPTI that
// hands nothing back): started once, its kernel kind on for records mode and windows, detached
// while every enforced tenant stays far below its limit, flushed when its buffers are slow to come
// back, watched for silence, and given up when the application takes it. kernel_records.h holds
// the calls into CUPTI themselves.

#include <stdio.h>
#include <stdlib.h>

#include "kernel_records.h"
#include "sampler_state.h"

namespace vgpu::sm::measuring {
namespace {

void StartCuptiOnce() {
  CuptiUse& c = g_own.cupti;
  if (c.tried) return;
  c.tried = true;
  const char* why = nullptr;
  c.ok = kernel_records::Start(g_config.cupti_library, &why);
  // Exit handlers run in reverse order: stop measuring before whatever CUPTI registered at its
  // start tears it down. (The handler registered at our own start stays for exits before this.)
  if (c.ok) (void)atexit(StopAtExit);
  if (!c.ok) {
    char line[512];
    (void)snprintf(
        line, sizeof(line),
        "kernel records unavailable (%s): GPU time is measured with CUDA events, which also "
        "count the GPU's short gaps between a host-bound loop's kernels (the limit holds, a "
        "host-bound tenant gets less than its share)",
        why != nullptr ? why : "?");
    Warn(line);
  }
}

// The application took CUPTI's activity API (a profiler): kernel records stop for good, once said.
void GiveUpIfTaken() {
  CuptiUse& c = g_own.cupti;
  if (!c.ok || !kernel_records::TakenByApplication()) return;
  c.ok = false;
  kernel_records::SetEnabled(false);
  if (c.warned_taken) return;
  c.warned_taken = true;
  char line[512];
  (void)snprintf(
      line, sizeof(line),
      "the application called %s (a profiler?): kernel records stop, GPU time is measured "
      "with CUDA events from now on, which also count the GPU's short gaps between a "
      "host-bound loop's kernels (the limit holds, a host-bound tenant gets less than its "
      "share)",
      kernel_records::TakenBy());
  Warn(line);
}

// A flush at most every kFlushIntervalNs while records are wanted, and only when CUPTI has handed
// no buffer back lately.
void FlushIfQuiet(int64_t now) {
  CuptiUse& c = g_own.cupti;
  if ((kernel_records::Enabled() || g_own.windows.collecting) &&
      now - c.last_flush_ns >= kFlushIntervalNs &&
      now - kernel_records::LastDeliveryNs() >= kDeliveredLatelyNs) {
    kernel_records::Flush();
    c.last_flush_ns = now;
    __atomic_fetch_add(&g_published.flushes, 1, __ATOMIC_RELAXED);
  }
}

// The second silence: CUDA events from now on, with a warning.
void GiveUpSilentCupti(uint64_t silent_launches, int64_t silent_ns) {
  CuptiUse& c = g_own.cupti;
  (void)kernel_records::SetEnabled(false);
  (void)kernel_records::Detach();
  c.ok = false;
  CloseWindows();
  char line[512];
  (void)snprintf(line, sizeof(line),
                 "CUPTI took the kernel records and handed none back (%llu launches in %.1f s of "
                 "launching, %d time%s): GPU time is measured with CUDA events from now on, which "
                 "also count the GPU's short gaps between a host-bound loop's kernels (the limit "
                 "holds, a host-bound tenant gets less than its share)",
                 static_cast<unsigned long long>(silent_launches),
                 static_cast<double>(silent_ns) / 1e9, c.silence.strikes,
                 c.silence.strikes == 1 ? "" : "s");
  Warn(line);
}

}  // namespace

bool CuptiUsable() {
  StartCuptiOnce();
  GiveUpIfTaken();
  return g_own.cupti.ok;
}

bool MayDetach(int64_t now) {
  const Needs& needs = g_own.needs;
  return now - needs.records_needed_ns >= kDetachHoldNs && now - needs.near_ns >= kDetachHoldNs;
}

WindowCounts DriveCupti(Measure measure, int64_t now) {
  WindowCounts counts{false, false, 0, 0};
  if (measure == kMeasureRecords) {
    kernel_records::SetEnabled(true);
    CloseWindows();
  } else if (measure == kMeasureSampled) {
    const bool detach = MayDetach(now);
    counts = DriveWindows(now, detach);
    if (detach && !g_own.windows.collecting && kernel_records::Attached()) kernel_records::Detach();
  } else {
    return counts;
  }
  FlushIfQuiet(now);
  return counts;
}

void RelaxCupti(int64_t now) {
  if (kernel_records::Enabled()) kernel_records::SetEnabled(false);
  CloseWindows();
  if (MayDetach(now) && kernel_records::Attached()) kernel_records::Detach();
}

// Detached at the first silence, to be attached again by the next pass that needs records; given
// up for CUDA events at the second.
void WatchForSilence(uint64_t launches) {
  CuptiUse& c = g_own.cupti;
  SilenceWatch& s = c.silence;
  const int64_t launching_ns = g_own.pace.launching_ns;
  if (!c.ok || !kernel_records::Enabled()) {
    s.since_launching_ns = -1;
    return;
  }
  const uint64_t delivered = kernel_records::Deliveries();
  if (s.since_launching_ns < 0 || delivered != s.deliveries) {
    const int strikes = delivered != s.deliveries ? 0 : s.strikes;
    s = SilenceWatch{launching_ns, launches, delivered, strikes};
    return;
  }
  const int64_t silent_ns = launching_ns - s.since_launching_ns;
  const uint64_t silent_launches = launches - s.launches;
  if (silent_ns < kSilentLaunchingNs || silent_launches < kSilentLaunches) return;
  s.since_launching_ns = -1;
  ++s.strikes;
  Trace("CUPTI handed back no buffer for %llu launches in %.1f s of launching (silence %d)",
        static_cast<unsigned long long>(silent_launches), static_cast<double>(silent_ns) / 1e9,
        s.strikes);
  if (s.strikes == 1 && kernel_records::Detach()) return;
  GiveUpSilentCupti(silent_launches, silent_ns);
}

void TraceAttachment() {
  TraceState& t = g_own.trace;
  if (g_config.stats >= 2 && kernel_records::Attached() != t.traced_attached) {
    t.traced_attached = !t.traced_attached;
    Trace("CUPTI %s", t.traced_attached ? "attached" : "detached");
  }
}

}  // namespace vgpu::sm::measuring
