#include "core/monitor/host_pid_match.h"

#include <algorithm>
#include <map>
#include <utility>

namespace vgpu::monitor {

std::vector<SlotMatch> MatchSlots(const std::vector<SlotIdentity>& slots, const FileId& region,
                                  const std::vector<HostProcess>& procs, bool procs_readable) {
  // Host processes by (PID in their own namespace, start time).
  std::multimap<std::pair<int32_t, uint64_t>, const HostProcess*> by_identity;
  for (const HostProcess& p : procs) {
    if (!p.ns_pids.empty()) by_identity.emplace(std::pair{p.ns_pids.back(), p.start_time}, &p);
  }
  std::vector<SlotMatch> out(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    const SlotIdentity& s = slots[i];
    if (s.pid <= 0 || s.start_time == 0) continue;
    if (!procs_readable) {
      out[i].state = SlotState::kUnverified;
      continue;
    }
    int owners = 0;
    bool unknown = false;
    int32_t owner = 0;
    auto [begin, end] = by_identity.equal_range({s.pid, s.start_time});
    for (auto it = begin; it != end; ++it) {
      const HostProcess& p = *it->second;
      if (!p.maps_read) {
        unknown = true;
      } else if (std::find(p.mapped.begin(), p.mapped.end(), region) != p.mapped.end()) {
        ++owners;
        owner = p.host_pid;
      }
    }
    if (owners == 1 && !unknown) {
      out[i] = SlotMatch{SlotState::kMatched, owner};
    } else if (owners > 0 || unknown) {
      // Ambiguous, or a candidate could not be checked: the slot may well be live, but no PID is
      // certain.
      out[i].state = SlotState::kUnverified;
    }
  }
  return out;
}

}  // namespace vgpu::monitor
