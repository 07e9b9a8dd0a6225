#pragma once

// Node-wide view of the limited processes that use one physical GPU (VgpuSmPeerTable, see
// sm_shared_state.h). A GPU time-slices between the contexts that have work, so an
// event-measured interval of one tenant also contains the slices the others ran; this table
// keeps the GPU's fair-share clock (integral of 1/busy tenants) so that every tenant can charge
// its budget with its own share of each interval. I/O adapter: open, mmap, fcntl.

#include <stdint.h>

#include "sm_shared_state.h"

namespace vgpu::sm {

struct PeerCounts {
  int32_t busy;       // busy slots, this process included when it is busy (>= 1)
  int32_t high_busy;  // busy slots of high-priority (0) owners other than this process
};

class PeerTable {
 public:
  // Maps `<dir>/vgpu-sm-<uuid_text>` (creating it) and claims a slot. On any failure the table
  // stays closed: Count() reports this process alone and Clock() runs at host speed (no sharing
  // correction: limits still hold, they only get stricter while other tenants are busy).
  bool Open(const char* dir, const char* uuid_text, int32_t priority);
  bool is_open() const { return table_ != nullptr; }

  // Marks this process busy (until about `busy_until_ns`) or idle. Touches shared memory only
  // on a change or when the promise moves later; callers are limited processes.
  void SetBusy(bool busy, int64_t now_ns, int64_t busy_until_ns);

  // Busy slots at `now_ns` (reaps slots of dead or silent owners at most every 250 ms).
  PeerCounts Count(int64_t now_ns);

  // The fair-share clock at `now_ns`, picoseconds.
  int64_t Clock(int64_t now_ns);

  // In a fork child: the fcntl lock that owned the slot was not inherited, so the slot is the
  // parent's; forget the mapping (the child claims its own slot on its next Open).
  void ForgetAfterFork();

 private:
  void Lock(int64_t now_ns);
  void Unlock();
  void AdvanceLocked(int64_t now_ns);
  void RecountLocked();
  void Reap(int64_t now_ns);

  VgpuSmPeerTable* table_ = nullptr;
  int fd_ = -1;
  int32_t slot_ = -1;
  int32_t priority_ = 1;
  bool busy_ = false;
  int64_t busy_until_ns_ = 0;
  int64_t last_reap_ns_ = 0;
};

}  // namespace vgpu::sm
