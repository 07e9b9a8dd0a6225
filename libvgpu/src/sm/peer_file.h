#pragma once

// The tenants of one physical GPU, node-wide: one file per GPU in the lock directory
// (`<dir>/vgpu-gpu4-<uuid hex>`; HAMi mounts the host's /tmp/vgpulock into every container), one
// slot per limited process that uses the GPU. Each tenant publishes the kernel-busy spans it
// measured and when it was last active, so that every tenant can split the time several of them
// were busy (attribution.h) and tell whether it is alone. No locks: one writer per slot, readers
// validate what they read against the slot's counter. A slot is owned through an fcntl byte lock,
// which the kernel drops when its process dies. I/O adapter: mkdir, openat, pread/pwrite, fcntl.
//
// The directory and the file are shared with every other tenant of the node, none of whom is
// trusted. So: the directory is opened without following a symbolic link and must be a directory
// that is sticky (1777) or belongs to root or to us; the file is opened under it with O_NOFOLLOW
// and must be a regular file with one name and the layout's size (a link to /etc/passwd is never
// grown or written); it is read and written with pread/pwrite, never mapped, so that another tenant
// truncating it cannot fault (SIGBUS) this process; and everything read from it is checked (slot
// counters, spans, limits) before it is used. A file that is refused leaves the tenant without
// peers: its kernels' time shared with others is charged to it in full (its limit holds,
// conservatively), and nobody else's limit changes.

#include <stdint.h>

#include "attribution.h"
#include "turns.h"

namespace vgpu::sm {

constexpr uint32_t kPeerMagic = 0x34475056u;  // "VPG4"
constexpr uint32_t kPeerVersion = 4u;
constexpr int kPeerSlots = 64;
constexpr int kPeerRing = 4096;  // spans per slot: ≥ 40 ms of a launch-bound loop's kernels
// Slot i is owned by whoever holds an fcntl write lock on this byte + i of the file.
constexpr int64_t kPeerLockBase = 1 << 30;
// A span longer than this in another tenant's ring is not a kernel's record: it is skipped (its
// time then counts as ours: conservative), and the sweep's arithmetic never sees extreme values.
constexpr int64_t kPeerMaxSpanNs = 60'000'000'000;

struct PeerSlotHead {
  int32_t pid;              // the owner, for people looking at the file
  int32_t priority;         // CUDA_TASK_PRIORITY: 0 high, 1 low
  int64_t active_until_ns;  // CLOCK_MONOTONIC: the owner was launching work until about then
  uint64_t published;       // spans written so far (ring index = published % kPeerRing)
  // Turns (turns.h): the owner is GPU-bound and takes turns until then, with this limit. 0, 0: not
  // a member.
  int64_t turn_until_ns;
  int32_t turn_percent;
  int32_t unused;
  uint64_t reserved[3];
};

struct PeerFileHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t slots;
  uint32_t ring;
  uint64_t reserved[6];
};

// Version 4 keeps the slots' heads together, so that one read sees them all.
struct PeerFileLayout {
  PeerFileHeader header;
  PeerSlotHead head[kPeerSlots];
  TimeSpan ring[kPeerSlots][kPeerRing];
};

struct PeerScan {
  int active;                 // other tenants active now
  bool high_priority_active;  // one of them has priority 0
};

class PeerFile {
 public:
  // Opens the GPU's file (creating the directory with mode 1777 and the file with 0666 when they
  // are missing) and claims a slot. False with `*why` set when it cannot or must not (see above):
  // the tenant then sees no other tenant (its overlaps with them are charged to it in full).
  bool Open(const char* dir, const char* uuid_hex, int32_t priority, const char** why);
  bool is_open() const { return open_; }

  // Tells the others this tenant is launching work until about `until_ns`.
  void SetActiveUntil(int64_t until_ns);
  // Joins the GPU's turns until `until_ns` with limit `percent` (0, 0: leaves them).
  void SetTurn(int64_t until_ns, int32_t percent);
  // The turn set at `now`, as this tenant sees it.
  TurnSet Turns(int64_t now) const;
  // Appends spans to this tenant's ring.
  void Publish(const TimeSpan* spans, int n);

  // The other tenants active at `now`.
  PeerScan Scan(int64_t now) const;
  // Spans of the other tenants active since `since_ns` that overlap [from, to); at most `max`.
  // owner = slot index.
  int Collect(int64_t from, int64_t to, int64_t since_ns, OwnedSpan* out, int max) const;

  // In a fork child: the fcntl lock that owns the slot is not inherited; forget the file.
  void ForgetAfterFork();

 private:
  // Reads every slot's head; what the file no longer holds (truncated) reads as zeros.
  void ReadHeads(PeerSlotHead* heads) const;
  void WriteOwn(uint64_t offset_in_head, const void* value, uint64_t size) const;

  // All zero when closed, so that a table of devices is zero-initialised.
  bool open_ = false;
  int fd_ = 0;
  int32_t slot_ = 0;
  uint64_t published_ = 0;
  int64_t active_until_ = 0;
  int64_t turn_until_ = 0;
};

}  // namespace vgpu::sm
