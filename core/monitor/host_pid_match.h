#pragma once

// Which host process owns each slot of a region. A slot names its process by PID in the
// container's PID namespace and start time; two containers can hold the same PID, so a host
// process owns the slot only when all three agree:
//   - the last NSpid entry (its PID in its own namespace) is the slot's pid,
//   - its start time is the slot's,
//   - it maps this region file.
//
// Liveness (the monitor never reaps: libvgpu does, from inside the container's namespace):
//   - kMatched: a host process owns the slot; it is live.
//   - kUnverified: the slot cannot be checked — the proc table could not be read at all, a process
//     with the slot's pid and start time exists whose maps could not be read, or several host
//     processes fit (nested PID namespaces). It counts as live (its usage is real as far as anyone
//     can tell) but gets no host PID.
//   - kGone: nobody owns it; its process has exited and the container's next process reaps it.

#include <cstdint>
#include <vector>

#include "core/monitor/host_process.h"

namespace vgpu::monitor {

struct SlotIdentity {
  int32_t pid = 0;          // 0: a free slot (always kGone)
  uint64_t start_time = 0;  // 0: still being claimed (always kGone: it is matched next tick)
};

enum class SlotState { kGone, kMatched, kUnverified };

struct SlotMatch {
  SlotState state = SlotState::kGone;
  int32_t host_pid = 0;  // when kMatched
  friend bool operator==(const SlotMatch&, const SlotMatch&) = default;
};

// One result per slot, in order. `procs_readable`: false when the proc table could not be read.
std::vector<SlotMatch> MatchSlots(const std::vector<SlotIdentity>& slots, const FileId& region,
                                  const std::vector<HostProcess>& procs, bool procs_readable);

}  // namespace vgpu::monitor
