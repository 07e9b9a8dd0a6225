#pragma once

// The GPU-time budget as a GCRA ("virtual scheduling") counter: a single int64 in shared memory,
// the time at which the budget is paid off. Refill by wall time is implicit (the clock moves),
// so there is no refill thread, no lock, and a killed process cannot strand budget: its debt
// simply expires. Pure functions plus one CAS loop; gain does not depend on the GPU's SM count.

#include <stdint.h>

namespace vgpu::sm {

// Wall time that `gpu_ns` of GPU time costs at `percent` (1..99) of the GPU.
inline int64_t CostWallNs(int64_t gpu_ns, int32_t percent) {
  if (gpu_ns <= 0 || percent <= 0) return 0;
  return gpu_ns * 100 / percent;
}

// The counter after charging `cost_ns`: unused budget older than `burst_ns` is forgotten.
inline int64_t TatAfterCharge(int64_t tat, int64_t now, int64_t burst_ns, int64_t cost_ns) {
  int64_t floor = now - burst_ns;
  return (tat > floor ? tat : floor) + cost_ns;
}

// How long a launch must wait at `now` (0 = go).
inline int64_t WaitNs(int64_t tat, int64_t now) {
  return tat > now ? tat - now : 0;
}

// When a launch that had to wait may go: once `resume_credit_ns` of budget has built up beyond the
// counter, if the burst window can keep that much. A launch-bound loop then runs in stretches of
// hundreds of launches between sleeps instead of paying a sleep and a wake-up every few launches;
// the extra wait is banked, not lost. Without a burst window (a low-priority tenant while a
// high-priority one waits) it goes as soon as the debt is paid.
inline int64_t ResumeAtNs(int64_t tat, int64_t burst_ns, int64_t resume_credit_ns) {
  return tat + (burst_ns >= resume_credit_ns ? resume_credit_ns : 0);
}

// The resume credit of a tenant alone on its GPU: long enough that it then runs `burst_ns` of GPU
// work in one stretch (a wait of burst·(100−p)/p), but at most `max_wait_ns` and never less than
// the credit of a shared GPU (`shared_ns`). An H100 that is not saturated runs its first ~50 ms of
// work after a pause at a higher clock than it sustains under full load (its power cap averages
// over about that long): in stretches of ~10 ms a tenant alone at 30 % did 1.15× the work of 30 %
// of its unlimited run, in stretches of ~470 ms at 70 % 1.02×. Beside other tenants the GPU is
// saturated anyway, and short stretches keep the hand-over quick.
inline int64_t AloneResumeCreditNs(int32_t percent, int64_t burst_ns, int64_t max_wait_ns,
                                   int64_t shared_ns) {
  if (percent <= 0 || percent >= 100 || burst_ns <= 0) return shared_ns;
  int64_t wait = burst_ns / percent * (100 - percent);
  if (wait > max_wait_ns) wait = max_wait_ns;
  return wait > shared_ns ? wait : shared_ns;
}

// Atomically charges `cost_ns` to the shared counter (any number of processes).
inline void ChargeShared(int64_t* tat, int64_t now, int64_t burst_ns, int64_t cost_ns) {
  int64_t old = __atomic_load_n(tat, __ATOMIC_RELAXED);
  while (!__atomic_compare_exchange_n(tat, &old, TatAfterCharge(old, now, burst_ns, cost_ns), true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

}  // namespace vgpu::sm
