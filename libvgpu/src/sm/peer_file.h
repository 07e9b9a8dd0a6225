#pragma once

// The tenants of one physical GPU, node-wide: one file per GPU in the lock directory
// (`<dir>/vgpu-gpu-<uuid hex>`; HAMi mounts the host's /tmp/vgpulock into every container), one
// slot per limited process that uses the GPU. Each tenant publishes the kernel-busy spans it
// measured and when it was last active, so that every tenant can split the time several of them
// were busy (attribution.h) and tell whether it is alone. No locks: one writer per slot, readers
// validate what they read against the slot's counter. A slot is owned through an fcntl byte lock,
// which the kernel drops when its process dies. I/O adapter: mkdir, open, mmap, fcntl.

#include <stdint.h>

#include "attribution.h"
#include "turns.h"

namespace vgpu::sm {

constexpr uint32_t kPeerMagic = 0x33475056u;  // "VPG3"
constexpr uint32_t kPeerVersion = 3u;
constexpr int kPeerSlots = 64;
constexpr int kPeerRing = 4096;  // spans per slot: ≥ 40 ms of a launch-bound loop's kernels
// Slot i is owned by whoever holds an fcntl write lock on this byte + i of the file.
constexpr int64_t kPeerLockBase = 1 << 30;

struct PeerSlotHead {
  int32_t pid;       // the owner, for people looking at the file
  int32_t priority;  // CUDA_TASK_PRIORITY: 0 high, 1 low
  int64_t
      active_until_ns;  // atomic; CLOCK_MONOTONIC: the owner was launching work until about then
  uint64_t published;   // atomic; spans written so far (ring index = published % kPeerRing)
  // Turns (turns.h): the owner is GPU-bound and takes turns until then, with this limit. Older
  // writers left these zero: not a member.
  int64_t turn_until_ns;  // atomic
  int32_t turn_percent;   // atomic
  int32_t unused;
  uint64_t reserved[3];
};

struct PeerSlot {
  PeerSlotHead head;
  TimeSpan ring[kPeerRing];
};

struct PeerFileLayout {
  uint32_t magic;
  uint32_t version;
  uint32_t slots;
  uint32_t ring;
  uint64_t reserved[6];
  PeerSlot slot[kPeerSlots];
};

struct PeerScan {
  int active;                 // other tenants active now
  bool high_priority_active;  // one of them has priority 0
};

class PeerFile {
 public:
  // Maps the GPU's file (creating the directory with mode 1777 and the file with 0666 when they
  // are missing) and claims a slot. False with `*why` set when it cannot: the tenant then sees no
  // other tenant (its overlaps with them are charged to it in full: conservative).
  bool Open(const char* dir, const char* uuid_hex, int32_t priority, const char** why);
  bool is_open() const { return file_ != nullptr; }

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

  // In a fork child: the fcntl lock that owns the slot is not inherited; forget the mapping.
  void ForgetAfterFork();

 private:
  // All zero when closed (file_ == nullptr), so that a table of devices is zero-initialised.
  PeerFileLayout* file_ = nullptr;
  int fd_ = 0;
  int32_t slot_ = 0;
  int64_t active_until_ = 0;
  int64_t turn_until_ = 0;
};

}  // namespace vgpu::sm
