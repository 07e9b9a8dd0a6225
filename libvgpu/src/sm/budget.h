#pragma once

// The container's GPU-time budget on one GPU, and the rhythm in which a throttled tenant runs.
// Pure functions plus one CAS loop; table-tested (tests/libvgpu/sm/budget_test.cpp).
//
// The budget is a GCRA ("virtual scheduling") counter: one int64 in the container's region, the
// CLOCK_MONOTONIC time at which the GPU time charged so far is paid off at the limit's rate.
// Charging g ns at p % moves it forward by g·100/p; a launch waits while it lies in the future.
// Refill by wall time is implicit, so there is no refill thread, no lock, and a process killed at
// any instruction strands nothing: its debt simply expires. Saved-up budget is capped by the
// burst window (the counter never falls further behind now than that).

#include <stdint.h>

namespace vgpu::sm {

// Wall time that `gpu_ns` of GPU time costs at `percent` (1..99) of the GPU.
inline int64_t CostWallNs(int64_t gpu_ns, int32_t percent) {
  if (gpu_ns <= 0 || percent <= 0) return 0;
  return gpu_ns * 100 / percent;
}

// The counter after charging `cost_ns`: unused budget older than `burst_ns` is forgotten.
inline int64_t TatAfterCharge(int64_t tat, int64_t now, int64_t burst_ns, int64_t cost_ns) {
  const int64_t floor = now - burst_ns;
  return (tat > floor ? tat : floor) + cost_ns;
}

// Atomically charges `cost_ns` to the shared counter (any number of processes).
inline void ChargeShared(int64_t* tat, int64_t now, int64_t burst_ns, int64_t cost_ns) {
  int64_t old = __atomic_load_n(tat, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(tat, &old, TatAfterCharge(old, now, burst_ns, cost_ns), true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// What the rhythm of a throttled tenant depends on (decided by the sampler, read by the gate).
struct RhythmInput {
  int32_t percent;     // 1..99
  int32_t pause_ms;    // pause between long stretches (VGPU_SM_ALONE_PAUSE_MS); 0 = none
  bool alone;          // no other tenant used this GPU lately
  bool saturating;     // the tenant keeps the GPU busy whenever it may run
  bool yield_to_high;  // low priority, and a high-priority tenant uses this GPU
};

struct Rhythm {
  int64_t resume_credit_ns;  // a throttled launch goes once this much budget has built up
  int64_t burst_ns;          // saved-up budget is kept for at most this long
};

// The short rhythm's credit (RhythmFor); a wait for more is one of the alone rhythm's pauses.
inline constexpr int64_t kShortRhythmCreditNs = 2'000'000;

inline bool IsPause(const Rhythm& rhythm) {
  return rhythm.resume_credit_ns > kShortRhythmCreditNs &&
         rhythm.burst_ns >= rhythm.resume_credit_ns;
}

// Short stretches keep a throttled tenant's waits (and so a request's extra latency) at a few
// milliseconds: a launch that had to wait goes once 2 ms of budget have built up, and unused
// budget is kept for 100 ms so that bursts of requests under the limit pass untouched.
//
// A saturating tenant alone on its GPU instead runs long stretches between pauses of `pause_ms`
// (the stretch follows from the limit: pause x L / (100 - L), 100 ms of work at 50 %): an H100
// that is not saturated runs its first ~50 ms after a pause at a higher clock than it sustains
// under full load (its power cap averages over about that long), so in 2-ms stretches a tenant
// alone at 30 % did 1.15x the work of 30 % of its unlimited (power-capped) run. What the clock does
// depends on the pause: with a fixed 250-ms stretch a tenant at 50 % (250-ms pauses) got 40-46 %
// of the unlimited work, and with a fixed 100-ms stretch one at 70 % (43-ms pauses) got 76-78 %;
// pauses of ~100 ms gave 31.5 / 51.5 / 71.7 % at 30 / 50 / 70 (H100, 2026-11-27). Nobody waits on
// a saturating tenant alone, and latency is not what it is for; a tenant that is not saturating
// (a service, a host-bound loop) keeps the short rhythm alone too.
//
// A low-priority tenant keeps no saved-up budget while a high-priority tenant uses the GPU: it runs
// strictly at its rate, never in bursts beside the high-priority work.
inline Rhythm RhythmFor(const RhythmInput& in) {
  constexpr int64_t kMs = 1'000'000;
  constexpr int64_t kShortBurstNs = 100 * kMs;
  constexpr int64_t kLongWaitMaxNs = 1000 * kMs;
  if (in.yield_to_high) return Rhythm{0, 0};
  if (!in.alone || !in.saturating || in.percent <= 0 || in.percent >= 100 || in.pause_ms <= 0)
    return Rhythm{kShortRhythmCreditNs, kShortBurstNs};
  // The wait is the budget that builds up during the pause; the tenant then runs until it is
  // spent, i.e. for pause x L / (100 - L) of GPU work.
  int64_t wait = in.pause_ms * kMs;
  if (wait > kLongWaitMaxNs) wait = kLongWaitMaxNs;
  if (wait < kShortRhythmCreditNs) wait = kShortRhythmCreditNs;
  return Rhythm{wait, wait > kShortBurstNs ? wait : kShortBurstNs};
}

// When a launch that found the budget in debt may go: once `credit_ns` beyond the counter has
// built up (the wait is banked in the burst window, not lost), so that a tenant runs in stretches
// instead of sleeping before every launch.
inline int64_t ResumeAtNs(int64_t tat, const Rhythm& rhythm) {
  return tat + (rhythm.burst_ns >= rhythm.resume_credit_ns ? rhythm.resume_credit_ns : 0);
}

}  // namespace vgpu::sm
