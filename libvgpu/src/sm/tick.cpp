// One device's pass of the measuring thread (sampler.cpp Pass calls it for every limited device
// that launches): a sequence of named steps, each below. Design: docs/sm-limit.md, steps 3-5.

#include <pthread.h>
#include <stdio.h>

#include "budget.h"
#include "sampler_state.h"
#include "turns.h"

namespace vgpu::sm::measuring {
namespace {

void OpenPeers(Device& d) {
  if (d.peers_tried) return;
  d.peers_tried = true;
  const char* why = nullptr;
  if (d.uuid_hex[0] == '\0') {
    why = "the GPU's UUID is unknown";
  } else if (d.peers.Open(g_config.lock_dir, d.uuid_hex, d.priority, &why)) {
    return;
  }
  char line[512];
  (void)snprintf(
      line, sizeof(line),
      "device %d: %s (%s): other tenants of this GPU are not seen, so time their kernels "
      "shared with ours is charged to us in full (the limit holds, conservatively)",
      d.ordinal, why, g_config.lock_dir);
  Warn(line);
}

// Step 1: whether other tenants of the GPU are active (and a high-priority one), from its file.
bool SeeOtherTenants(Device& d, int64_t now) {
  MeterState& m = d.meter;
  OpenPeers(d);
  const PeerScan scan = d.peers.Scan(now);
  if (scan.active > 0) m.others_seen_ns = now;
  if (scan.high_priority_active) m.high_seen_ns = now;
  return OthersActive(m, now);
}

// Step 3: charges what the pass measured.
void ChargeThePass(Device& d, int64_t now, const Measured& measured) {
  if (measured.charged > 0 || measured.busy > 0) Charge(d, measured.charged, measured.busy, now);
  __atomic_fetch_add(&d.shared_ns, static_cast<uint64_t>(measured.shared), __ATOMIC_RELAXED);
}

// How long the process's launching threads have waited for budget or a turn on `d` until `now`:
// the waits that ended and the one under way (a second thread waiting at once is not seen until
// its wait ends).
int64_t WaitedNs(const Device& d, int64_t now) {
  const uint64_t ended = __atomic_load_n(&d.throttled_ns, __ATOMIC_RELAXED) +
                         __atomic_load_n(&d.turn_wait_ns, __ATOMIC_RELAXED);
  const int64_t since = __atomic_load_n(&d.waiting_since_ns, __ATOMIC_RELAXED);
  return static_cast<int64_t>(ended) + (since != 0 && since < now ? now - since : 0);
}

// Step 4: the estimates the rhythm and the choice of measure rest on; whether the tenant
// saturates the GPU. Saturating: kernel-busy over the time the app was free to launch, i.e. the
// pass's time less what its launching threads waited in it, to the nanosecond: waits of the short
// rhythm (2-4 ms) mostly fall between two passes, and counted as free time they made a saturating
// tenant look host-bound (busy ~0.9 of free), which kept it in the short rhythm. (The turns' sync
// fraction keeps the passes' coarser count, `running_sum`, on which its thresholds were measured.)
bool UpdateEstimates(Device& d, int64_t now, int64_t dt, const Measured& measured,
                     int64_t event_busy, uint64_t launched, uint64_t launches) {
  MeterState& m = d.meter;
  const int64_t waited_total = WaitedNs(d, now);
  int64_t waited = waited_total - m.waited_seen_ns;
  m.waited_seen_ns = waited_total;
  waited = waited < 0 ? 0 : (waited > dt ? dt : waited);  // a wait ending mid-read: one pass off
  if (dt > 0) {
    m.usage = Ewma(m.usage, static_cast<double>(measured.charged) / static_cast<double>(dt), dt,
                   kUsageTauNs);
    // The work's signature, to notice when a calibration went stale (Moved).
    NoteWork(m.work, m.work_ns, WorkSample{dt, event_busy, launched});
    const bool waiting = __atomic_load_n(&d.waiting_since_ns, __ATOMIC_RELAXED) != 0;
    const double decay = 1.0 - static_cast<double>(dt) / static_cast<double>(dt + kDecayTauNs);
    m.busy_sum = m.busy_sum * decay + static_cast<double>(measured.busy);
    m.free_sum = m.free_sum * decay + static_cast<double>(dt - waited);
    m.running_sum = m.running_sum * decay + (waiting ? 0.0 : static_cast<double>(dt));
  }
  m.launches_seen = launches;
  return m.free_sum > kSaturatingMinFreeNs && m.busy_sum >= kSaturating * m.free_sum;
}

// Step 5: turns (turns.h): a tenant that mostly waits for the GPU takes turns with the others
// that do.
void TakeTurnsIfGpuBound(Device& d, int64_t now, int64_t dt) {
  MeterState& m = d.meter;
  const uint64_t sync_total = __atomic_load_n(&d.sync_ns, __ATOMIC_RELAXED);
  if (dt > 0) {
    const double decay = 1.0 - static_cast<double>(dt) / static_cast<double>(dt + kDecayTauNs);
    m.sync_sum = m.sync_sum * decay + static_cast<double>(sync_total - m.sync_seen);
  }
  m.sync_seen = sync_total;
  m.work.sync_fraction = m.running_sum > 0 ? m.sync_sum / m.running_sum : 0.0;
  m.gpu_bound = GpuBound(m.gpu_bound, m.sync_sum, m.running_sum);
  TurnWindow turn{0, 0};
  if (m.gpu_bound) {
    d.peers.SetTurn(now + kTurnHoldNs, d.percent);
    turn = TurnWindowFor(d.peers.Turns(now), d.percent);
  } else {
    d.peers.SetTurn(0, 0);
  }
  __atomic_store_n(&d.turn_window, PackTurn(turn), __ATOMIC_RELAXED);
}

// Step 6: the rhythm the launch path waits in (budget.h).
void SetRhythm(Device& d, int64_t now, bool others, bool saturating) {
  const MeterState& m = d.meter;
  const bool high = m.high_seen_ns != 0 && now - m.high_seen_ns < kOthersMemoryNs;
  const Rhythm rhythm = RhythmFor(RhythmInput{d.percent, g_config.alone_pause_ms, !others,
                                              saturating, d.priority != 0 && high});
  __atomic_store_n(&d.resume_credit_ns, rhythm.resume_credit_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&d.burst_ns, rhythm.burst_ns, __ATOMIC_RELAXED);
}

// Step 7: tells the others we are here while we launch.
void AnnounceActive(Device& d, int64_t now) {
  MeterState& m = d.meter;
  const int64_t until = __atomic_load_n(&d.last_launch_ns, __ATOMIC_RELAXED) + kActiveHoldNs;
  if (until > now && until - m.active_until_ns >= kActiveRepublishNs) {
    d.peers.SetActiveUntil(until);
    m.active_until_ns = until;
  }
}

}  // namespace

void Tick(Device& d, int64_t now, Measure measure, WindowCounts window, bool final) {
  MeterState& m = d.meter;
  const int64_t dt = m.last_tick_ns != 0 ? now - m.last_tick_ns : 0;
  m.last_tick_ns = now;
  const bool others = SeeOtherTenants(d, now);
  // Step 2: what the kernels used since the last pass.
  const PolledEvents events = PollEvents(d, now);
  const uint64_t launches = __atomic_load_n(&d.launches, __ATOMIC_RELAXED);
  const uint64_t launched = launches - m.launches_seen;
  const Measured measured = MeasurePass(d, now, measure, window, final, others, events, launched);
  ChargeThePass(d, now, measured);
  const bool saturating = UpdateEstimates(d, now, dt, measured, events.busy_ns, launched, launches);
  TakeTurnsIfGpuBound(d, now, dt);
  SetRhythm(d, now, others, saturating);
  AnnounceActive(d, now);
}

}  // namespace vgpu::sm::measuring
