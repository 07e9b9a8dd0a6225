#pragma once

// What a tick of the node monitor reads, decided from what earlier ticks found, so that a tick on a
// quiet node costs little (docs/monitor.md "Overhead"):
//  - slots: a region has 1024 process slots, mostly free. A full sweep of a region is needed only
//    now and then; in between, the slots occupied last time are re-read, and new processes are
//    found where libvgpu puts them (it claims the lowest free slot: vgpu_region_claim_slot);
//  - host processes: a slot whose owner was found keeps it while the owner's start time stays the
//    same (one small read per live slot); the whole of /proc is read only for slots not seen
//    before, slots that could not be verified, and every so often;
//  - directories: a directory is listed again only when its modification time changed (or is
//    too recent to tell).
// Pure: the engine (monitor/node_monitor.cpp) does the reads.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/monitor/host_pid_match.h"

namespace vgpu::monitor {

// ---- slots ----------------------------------------------------------------------------------

// An occupied slot as last read: its index and owner (pid != 0; start_time 0 while claimed).
struct SeenSlot {
  int index = 0;
  SlotIdentity id;
  friend bool operator==(const SeenSlot& a, const SeenSlot& b) {
    return a.index == b.index && a.id.pid == b.id.pid && a.id.start_time == b.id.start_time;
  }
};

// Re-reads the slots occupied last tick (`known`, by ascending index) through `read`, then the
// other slots in ascending order until `free_run` free ones in a row: libvgpu claims the lowest
// free slot, so new processes are found there, even when a process that started and exited since
// the last tick held a slot below theirs. The occupied slots by ascending index, or nullopt when a
// known slot was freed or changed hands: slots may then have been claimed anywhere, and the region
// needs a full sweep. `read(i)` gives slot i's owner (pid 0: free).
std::optional<std::vector<SeenSlot>> FollowKnownSlots(std::span<const SeenSlot> known,
                                                      int max_slots, int free_run,
                                                      const std::function<SlotIdentity(int)>& read);

// Whether the slots read account for the device records' totals: for each device d,
// Σ (mem_used[d] + mem_overhead[d]) over the slots equals the record's mem_used. When not, a slot
// holding memory was missed (or a process was changing its figures while they were read): the
// region needs a full sweep. `slot_memory[k][d]` is slot k's mem_used + mem_overhead on device d.
bool SlotsExplainTotals(std::span<const uint64_t> device_totals,
                        std::span<const std::vector<uint64_t>> slot_memory);

// ---- host processes --------------------------------------------------------------------------

// What to do about a slot's owner this tick, given what an earlier tick found for the same
// (region, pid, start time) — `cached`, null when nothing — and whether the periodic refresh of
// everything is due.
enum class OwnerStep {
  kScan,     // look for it in the host's process table
  kRecheck,  // it was matched: check that the host process still has its start time
  kGone,     // it was gone: a process that exited does not come back
};
OwnerStep PlanOwnerLookup(const SlotMatch* cached, bool refresh_due);

// The host process of a slot matched earlier, read again: its state and start time from
// /proc/<host_pid>/stat (nullopt: no such process), or unreadable. The slot's match, or nullopt
// when the process table must be scanned for it.
struct HostStat {
  char state = 'R';
  uint64_t start_time = 0;
};
std::optional<SlotMatch> RecheckOwner(const SlotMatch& cached, uint64_t slot_start_time,
                                      const std::optional<HostStat>& now, bool readable);

// ---- directories -----------------------------------------------------------------------------

// A directory's identity and modification time as fstat gives them.
struct DirStamp {
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t mtime_ns = 0;  // CLOCK_REALTIME, ns
  friend bool operator==(const DirStamp&, const DirStamp&) = default;
};

// Whether a directory listed when its stamp was `listed` (at `listed_at_ns`, CLOCK_REALTIME) must
// be listed again now that its stamp is `now`. File systems stamp with a coarse clock, so a change
// in the same clock tick as the listing may leave the time as it was: a listing taken less than
// `margin` after the directory's last change does not count as up to date.
bool ShouldRelistDirectory(const std::optional<DirStamp>& listed, int64_t listed_at_ns,
                           const DirStamp& now, std::chrono::nanoseconds margin);

}  // namespace vgpu::monitor
