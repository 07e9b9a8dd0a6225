#pragma once

// Node-wide coordination of the limited processes that use one physical GPU (VgpuSmPeerTable in
// sm_shared_state.h). A GPU runs one context at a time and time-slices between contexts that
// have work, so an event-measured interval of one tenant would also contain the slices that the
// others ran. The table's lease lets one limited tenant at a time keep work queued; handed over
// after a quantum when others wait, so every tenant's events measure its own GPU time only.
// Lock-free (one CAS word), time-bounded, SIGKILL-safe. I/O adapter: open, mmap, fcntl.

#include <stdint.h>

#include "sm_shared_state.h"

namespace vgpu::sm {

struct LeaseParams {
  int64_t quantum_ns = 100'000'000;      // a holder keeps the GPU this long while others wait
  int64_t quantum_low_ns = 5'000'000;    // a low-priority holder, while a high-priority one waits
  int64_t handoff_grace_ns = 5'000'000;  // a lease handed to a waiter is its for this long
};

class PeerTable {
 public:
  // Maps `<dir>/vgpu-sm-<uuid_text>` (creating it) and claims a slot. On any failure the table
  // stays closed and the process runs without a lease (it always "holds" it): limits still hold,
  // only overlapping tenants then see each other's slices in their measurements.
  bool Open(const char* dir, const char* uuid_text, int32_t priority);
  bool is_open() const { return table_ != nullptr; }

  // Takes (or keeps) the lease until `until_ns`. False when another tenant holds it; the caller
  // is then registered as waiting and retries.
  bool TryAcquire(int64_t now_ns, int64_t until_ns);
  // Moves the end of a held lease (no-op when not held).
  void Extend(int64_t until_ns);
  // Generation of the lease, to pass to WaitForRelease after a failed TryAcquire.
  uint32_t Generation() const;
  // Sleeps until the lease is released or handed on after `generation`, or `max_ns` passed
  // (a futex on the shared page: waiters cost no CPU while they wait).
  void WaitForRelease(uint32_t generation, int64_t max_ns) const;
  // True when this process holds the lease.
  bool Holding() const;
  // Slot of the lease holder (-1: free or table closed), and this process's slot.
  int32_t Holder() const;
  int32_t slot() const { return slot_; }
  // True when the holder has had the GPU for its quantum and another tenant waits.
  bool ShouldYield(int64_t now_ns);
  // Gives a held lease to the best waiter (high priority first, then round robin), or frees it.
  // `drain_ns`: when this process's still-queued work should be done (now when none).
  void Release(int64_t now_ns, int64_t drain_ns);
  // After a TryAcquire that started a new turn: until when the previous holder's work may still
  // occupy the GPU (0 when unknown). Cleared by the call.
  int64_t TakeOverlapUntil();
  // True when that turn was handed to this process by the previous holder (not a free lease).
  bool handed_over() const { return handed_over_; }
  // Changes whenever this process's turn on the GPU begins or ends: equal values at two launches
  // mean it held the GPU all the time in between.
  uint64_t turn() const { return turn_; }
  // True when another tenant waits for the GPU now (a scan of the slots: not for every launch).
  bool AnyoneWaiting() const;

  // True when another live process has a slot: a limited tenant of this GPU, busy or not (one
  // fcntl query). Also true when the table is closed: without it nobody can tell.
  bool OthersPresent() const;

  // True when a high-priority tenant other than this process is waiting for the GPU.
  bool HighPriorityWaiting() const;

  // In a fork child: the fcntl lock that owned the slot was not inherited; forget the mapping.
  void ForgetAfterFork();

  const LeaseParams& params() const { return params_; }

 private:
  void SetWaiting(bool waiting, int64_t now_ns);
  void BumpGeneration();
  void Reap(int64_t now_ns);
  int32_t PickWaiter() const;

  VgpuSmPeerTable* table_ = nullptr;
  int fd_ = -1;
  int32_t slot_ = -1;
  int32_t priority_ = 1;
  bool waiting_ = false;
  int64_t acquired_ns_ = 0;
  int64_t overlap_until_ns_ = 0;
  bool handed_over_ = false;
  uint64_t turn_ = 0;
  int64_t last_reap_ns_ = 0;
  // ShouldYield's snapshot of the waiting slots, and when it was taken.
  int64_t waiters_scanned_ns_ = INT64_MIN / 2;
  bool high_waiting_seen_ = false;
  bool waiter_seen_ = false;
  LeaseParams params_{};
};

}  // namespace vgpu::sm
