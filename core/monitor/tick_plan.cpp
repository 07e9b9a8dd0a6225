#include "core/monitor/tick_plan.h"

#include <algorithm>

namespace vgpu::monitor {

std::optional<std::vector<SeenSlot>> FollowKnownSlots(
    std::span<const SeenSlot> known, int max_slots, int free_run,
    const std::function<SlotIdentity(int)>& read) {
  std::vector<SeenSlot> out;
  out.reserve(known.size() + 1);
  for (const SeenSlot& k : known) {
    if (k.index < 0 || k.index >= max_slots) return std::nullopt;
    const SlotIdentity now = read(k.index);
    // Same owner: same pid, and the start time it had (0 while being claimed: it may appear).
    const bool same =
        now.pid == k.id.pid && (k.id.start_time == 0 || now.start_time == k.id.start_time);
    if (!same) return std::nullopt;
    out.push_back(SeenSlot{k.index, now});
  }
  // New claims take the lowest free slot: walk the slots not known, lowest first, until
  // `free_run` free ones in a row.
  size_t next_known = 0;
  int free_in_a_row = 0;
  for (int i = 0; i < max_slots && free_in_a_row < free_run; ++i) {
    if (next_known < known.size() && known[next_known].index == i) {
      ++next_known;
      free_in_a_row = 0;
      continue;
    }
    const SlotIdentity now = read(i);
    if (now.pid == 0) {
      ++free_in_a_row;
      continue;
    }
    free_in_a_row = 0;
    out.push_back(SeenSlot{i, now});
  }
  std::sort(out.begin(), out.end(),
            [](const SeenSlot& a, const SeenSlot& b) { return a.index < b.index; });
  return out;
}

bool SlotsExplainTotals(std::span<const uint64_t> device_totals,
                        std::span<const std::vector<uint64_t>> slot_memory) {
  for (size_t d = 0; d < device_totals.size(); ++d) {
    uint64_t sum = 0;
    for (const std::vector<uint64_t>& slot : slot_memory) {
      if (d < slot.size()) sum += slot[d];
    }
    if (sum != device_totals[d]) return false;
  }
  return true;
}

OwnerStep PlanOwnerLookup(const SlotMatch* cached, bool refresh_due) {
  if (cached == nullptr || refresh_due) return OwnerStep::kScan;
  switch (cached->state) {
    case SlotState::kMatched:
      return OwnerStep::kRecheck;
    case SlotState::kGone:
      return OwnerStep::kGone;
    case SlotState::kUnverified:
      break;
  }
  return OwnerStep::kScan;
}

std::optional<SlotMatch> RecheckOwner(const SlotMatch& cached, uint64_t slot_start_time,
                                      const std::optional<HostStat>& now, bool readable) {
  if (cached.state != SlotState::kMatched || !readable) return std::nullopt;
  // The host PID with the slot's start time is the same process (a PID is not reused while its
  // process lives); a zombie has exited.
  if (!now || now->state == 'Z' || now->state == 'X' || now->start_time != slot_start_time) {
    return SlotMatch{SlotState::kGone, 0};
  }
  return cached;
}

bool ShouldRelistDirectory(const std::optional<DirStamp>& listed, int64_t listed_at_ns,
                           const DirStamp& now, std::chrono::nanoseconds margin) {
  if (!listed || !(*listed == now)) return true;
  return listed_at_ns - now.mtime_ns < margin.count();
}

}  // namespace vgpu::monitor
