#include "peer_table.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace vgpu::sm {
namespace {

constexpr int64_t kReapIntervalNs = 250'000'000;
constexpr int64_t kWaiterScanIntervalNs = 250'000;

bool LockSlotByte(int fd, int32_t slot) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = VGPU_SM_PEER_LOCK_BASE + slot;
  lock.l_len = 1;
  return fcntl(fd, F_SETLK, &lock) == 0;
}

// True when some process (not this one: fcntl never reports our own locks) holds slot's lock.
bool SlotOwnerAlive(int fd, int32_t slot) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = VGPU_SM_PEER_LOCK_BASE + slot;
  lock.l_len = 1;
  if (fcntl(fd, F_GETLK, &lock) != 0) return true;  // cannot tell: keep it
  return lock.l_type != F_UNLCK;
}

}  // namespace

bool PeerTable::Open(const char* dir, const char* uuid_text, int32_t priority) {
  if (table_ != nullptr) return true;
  priority_ = priority;
  char path[512];
  if (snprintf(path, sizeof(path), "%s/vgpu-sm-%s", dir, uuid_text) >=
      static_cast<int>(sizeof(path)))
    return false;
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0) {
    fchmod(fd, 0666);  // every container's processes must be able to join, whatever the umask
  } else if (errno == EEXIST) {
    fd = open(path, O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) return false;
  const off_t size = static_cast<off_t>(sizeof(VgpuSmPeerTable));
  off_t current = lseek(fd, 0, SEEK_END);
  if (current < size && ftruncate(fd, size) != 0) {
    close(fd);
    return false;
  }
  void* map = mmap(nullptr, sizeof(VgpuSmPeerTable), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    close(fd);
    return false;
  }
  auto* table = static_cast<VgpuSmPeerTable*>(map);
  uint32_t expected = 0;
  __atomic_compare_exchange_n(&table->magic, &expected, VGPU_SM_PEER_MAGIC, false, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  if (__atomic_load_n(&table->magic, __ATOMIC_ACQUIRE) != VGPU_SM_PEER_MAGIC) {
    munmap(map, sizeof(VgpuSmPeerTable));
    close(fd);
    return false;
  }
  __atomic_store_n(&table->version, VGPU_SM_PEER_VERSION, __ATOMIC_RELAXED);
  __atomic_store_n(&table->slots, VGPU_SM_PEER_SLOTS, __ATOMIC_RELAXED);
  for (int32_t i = 0; i < VGPU_SM_PEER_SLOTS; ++i) {
    if (!LockSlotByte(fd, i)) continue;
    // The slot's previous owner (if any) is dead: its lock is gone. Reset what it left.
    __atomic_store_n(&table->slot[i].priority, priority, __ATOMIC_RELAXED);
    __atomic_store_n(&table->slot[i].waiting_since_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&table->slot[i].waiting, 0, __ATOMIC_RELEASE);
    table_ = table;
    fd_ = fd;
    slot_ = i;
    return true;
  }
  munmap(map, sizeof(VgpuSmPeerTable));  // all slots taken: run without the correction
  close(fd);
  return false;
}

namespace {

uint64_t LeaseWord(int32_t slot, int64_t until_ns) {
  uint64_t until_us =
      static_cast<uint64_t>(until_ns > 0 ? until_ns / 1000 : 0) & VGPU_SM_LEASE_TIME_MASK;
  return (static_cast<uint64_t>(slot + 1) << VGPU_SM_LEASE_OWNER_SHIFT) | until_us;
}
int32_t LeaseOwner(uint64_t word) {
  return static_cast<int32_t>(word >> VGPU_SM_LEASE_OWNER_SHIFT) - 1;
}
int64_t LeaseUntilNs(uint64_t word) {
  return static_cast<int64_t>(word & VGPU_SM_LEASE_TIME_MASK) * 1000;
}

}  // namespace

bool PeerTable::TryAcquire(int64_t now_ns, int64_t until_ns) {
  if (table_ == nullptr) return true;
  if (now_ns - last_reap_ns_ >= kReapIntervalNs) Reap(now_ns);
  uint64_t word = __atomic_load_n(&table_->lease, __ATOMIC_ACQUIRE);
  for (;;) {
    int32_t owner = LeaseOwner(word);
    bool mine = owner == slot_;
    bool free = word == 0 || LeaseUntilNs(word) < now_ns;
    if (!mine && !free) {
      SetWaiting(true, now_ns);
      return false;
    }
    // Already ours for long enough: no shared-memory write on the launch path.
    if (mine && !waiting_ && LeaseUntilNs(word) >= until_ns - 1'000'000) return true;
    uint64_t next =
        LeaseWord(slot_, until_ns > LeaseUntilNs(word) || !mine ? until_ns : LeaseUntilNs(word));
    if (__atomic_compare_exchange_n(&table_->lease, &word, next, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      // A lease handed to us by the previous holder, or taken free, starts our quantum now.
      if (!mine || waiting_) {
        acquired_ns_ = now_ns;
        overlap_until_ns_ = __atomic_load_n(&table_->handoff_drain_ns, __ATOMIC_RELAXED);
        handed_over_ = mine;
        ++turn_;
      }
      SetWaiting(false, now_ns);
      return true;
    }
  }
}

void PeerTable::Extend(int64_t until_ns) {
  if (table_ == nullptr) return;
  uint64_t word = __atomic_load_n(&table_->lease, __ATOMIC_ACQUIRE);
  while (LeaseOwner(word) == slot_ && LeaseUntilNs(word) < until_ns) {
    if (__atomic_compare_exchange_n(&table_->lease, &word, LeaseWord(slot_, until_ns), false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return;
  }
}

bool PeerTable::Holding() const {
  if (table_ == nullptr) return true;
  return LeaseOwner(__atomic_load_n(&table_->lease, __ATOMIC_ACQUIRE)) == slot_;
}

uint32_t PeerTable::Generation() const {
  if (table_ == nullptr) return 0;
  return __atomic_load_n(&table_->lease_gen, __ATOMIC_ACQUIRE);
}

void PeerTable::WaitForRelease(uint32_t generation, int64_t max_ns) const {
  if (table_ == nullptr || max_ns <= 0) return;
  timespec timeout{static_cast<time_t>(max_ns / 1'000'000'000),
                   static_cast<long>(max_ns % 1'000'000'000)};
  // Shared (not FUTEX_PRIVATE): waiters and wakers are different processes mapping one file.
  syscall(SYS_futex, &table_->lease_gen, FUTEX_WAIT, generation, &timeout, nullptr, 0);
}

void PeerTable::BumpGeneration() {
  __atomic_add_fetch(&table_->lease_gen, 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &table_->lease_gen, FUTEX_WAKE, 0x7fffffff, nullptr, nullptr, 0);
}

int32_t PeerTable::Holder() const {
  if (table_ == nullptr) return -1;
  uint64_t word = __atomic_load_n(&table_->lease, __ATOMIC_ACQUIRE);
  return word == 0 ? -1 : LeaseOwner(word);
}

bool PeerTable::ShouldYield(int64_t now_ns) {
  if (table_ == nullptr || !Holding()) return false;
  int64_t held = now_ns - acquired_ns_;
  if (held < params_.quantum_low_ns) return false;
  // Scanning the 64 slots costs more than the rest of the launch path together: a launch-bound
  // loop looks at a snapshot that is at most kWaiterScanIntervalNs old (against quanta of 5 and
  // 100 ms, a negligible delay).
  if (now_ns - waiters_scanned_ns_ >= kWaiterScanIntervalNs || now_ns < waiters_scanned_ns_) {
    waiters_scanned_ns_ = now_ns;
    high_waiting_seen_ = HighPriorityWaiting();
    waiter_seen_ = high_waiting_seen_ || PickWaiter() >= 0;
  }
  if (priority_ != 0 && high_waiting_seen_) return true;
  return held >= params_.quantum_ns && waiter_seen_;
}

int64_t PeerTable::TakeOverlapUntil() {
  int64_t until = overlap_until_ns_;
  overlap_until_ns_ = 0;
  return until;
}

void PeerTable::Release(int64_t now_ns, int64_t drain_ns) {
  if (table_ == nullptr) return;
  if (Holding()) __atomic_store_n(&table_->handoff_drain_ns, drain_ns, __ATOMIC_RELAXED);
  uint64_t word = __atomic_load_n(&table_->lease, __ATOMIC_ACQUIRE);
  while (LeaseOwner(word) == slot_) {
    int32_t waiter = PickWaiter();
    uint64_t next = waiter >= 0 ? LeaseWord(waiter, now_ns + params_.handoff_grace_ns) : 0;
    if (__atomic_compare_exchange_n(&table_->lease, &word, next, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      ++turn_;
      if (waiter >= 0 || PickWaiter() >= 0) BumpGeneration();  // wake only when someone waits
      return;
    }
  }
}

bool PeerTable::OthersPresent() const {
  if (table_ == nullptr) return true;
  // One query over every slot's byte: fcntl reports a lock of another process, never our own.
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = VGPU_SM_PEER_LOCK_BASE;
  lock.l_len = VGPU_SM_PEER_SLOTS;
  if (fcntl(fd_, F_GETLK, &lock) != 0) return true;
  return lock.l_type != F_UNLCK;
}

bool PeerTable::HighPriorityWaiting() const {
  if (table_ == nullptr) return false;
  for (int32_t i = 0; i < VGPU_SM_PEER_SLOTS; ++i) {
    if (i == slot_) continue;
    const VgpuSmPeerSlot& slot = table_->slot[i];
    if (__atomic_load_n(&slot.waiting, __ATOMIC_ACQUIRE) != 0 &&
        __atomic_load_n(&slot.priority, __ATOMIC_RELAXED) == 0)
      return true;
  }
  return false;
}

bool PeerTable::AnyoneWaiting() const {
  return table_ != nullptr && PickWaiter() >= 0;
}

int32_t PeerTable::PickWaiter() const {
  int32_t best = -1;
  int32_t best_priority = 2;
  for (int32_t k = 1; k < VGPU_SM_PEER_SLOTS; ++k) {  // round robin: start after our own slot
    int32_t i = (slot_ + k) % VGPU_SM_PEER_SLOTS;
    const VgpuSmPeerSlot& slot = table_->slot[i];
    if (__atomic_load_n(&slot.waiting, __ATOMIC_ACQUIRE) == 0) continue;
    int32_t priority = __atomic_load_n(&slot.priority, __ATOMIC_RELAXED) == 0 ? 0 : 1;
    if (priority < best_priority) {
      best = i;
      best_priority = priority;
    }
  }
  return best;
}

void PeerTable::SetWaiting(bool waiting, int64_t now_ns) {
  if (waiting == waiting_) return;
  VgpuSmPeerSlot& slot = table_->slot[slot_];
  if (waiting) __atomic_store_n(&slot.waiting_since_ns, now_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&slot.waiting, waiting ? 1 : 0, __ATOMIC_RELEASE);
  waiting_ = waiting;
}

void PeerTable::Reap(int64_t now_ns) {
  last_reap_ns_ = now_ns;
  for (int32_t i = 0; i < VGPU_SM_PEER_SLOTS; ++i) {
    if (i == slot_) continue;
    VgpuSmPeerSlot& slot = table_->slot[i];
    // A dead waiter would be handed the lease and waste a grace period: drop its flag.
    if (__atomic_load_n(&slot.waiting, __ATOMIC_ACQUIRE) != 0 && !SlotOwnerAlive(fd_, i))
      __atomic_store_n(&slot.waiting, 0, __ATOMIC_RELEASE);
  }
}

void PeerTable::ForgetAfterFork() {
  if (table_ != nullptr) munmap(table_, sizeof(VgpuSmPeerTable));
  if (fd_ >= 0) close(fd_);
  table_ = nullptr;
  fd_ = -1;
  slot_ = -1;
  waiting_ = false;
  acquired_ns_ = 0;
  overlap_until_ns_ = 0;
  last_reap_ns_ = 0;
  waiters_scanned_ns_ = INT64_MIN / 2;
  high_waiting_seen_ = false;
  waiter_seen_ = false;
}

}  // namespace vgpu::sm
