#include "peer_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace vgpu::sm {
namespace {

constexpr int64_t kReapIntervalNs = 250'000'000;

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
  if (snprintf(path, sizeof(path), "%s/vgpu-sm-%s", dir, uuid_text) >= static_cast<int>(sizeof(path)))
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
    __atomic_store_n(&table->slot[i].busy_until_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&table->slot[i].active, 0, __ATOMIC_RELEASE);
    table_ = table;
    fd_ = fd;
    slot_ = i;
    return true;
  }
  munmap(map, sizeof(VgpuSmPeerTable));  // all slots taken: run without the correction
  close(fd);
  return false;
}

void PeerTable::Lock(int64_t now_ns) {
  for (int spins = 0;; ++spins) {
    int64_t held = __atomic_load_n(&table_->lock_ns, __ATOMIC_RELAXED);
    if (held == 0) {
      if (__atomic_compare_exchange_n(&table_->lock_ns, &held, now_ns, false, __ATOMIC_ACQUIRE,
                                      __ATOMIC_RELAXED))
        return;
    } else if (now_ns - held > VGPU_SM_PEER_LOCK_STEAL_NS) {
      // The holder died inside a few instructions (or stalled very long): take over. The
      // recount below repairs whatever it left half done.
      if (__atomic_compare_exchange_n(&table_->lock_ns, &held, now_ns, false, __ATOMIC_ACQUIRE,
                                      __ATOMIC_RELAXED))
        return;
    }
    if (spins > 64) {
      sched_yield();
      timespec ts{};
      clock_gettime(CLOCK_MONOTONIC, &ts);
      now_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    }
  }
}

void PeerTable::Unlock() { __atomic_store_n(&table_->lock_ns, 0, __ATOMIC_RELEASE); }

void PeerTable::AdvanceLocked(int64_t now_ns) {
  int64_t last = table_->clock_last_ns;
  if (now_ns > last) {
    int32_t busy = table_->busy > 0 ? table_->busy : 1;
    table_->clock_ps += (now_ns - last) * 1000 / busy;
    table_->clock_last_ns = now_ns;
  }
}

void PeerTable::RecountLocked() {
  int32_t busy = 0;
  for (const VgpuSmPeerSlot& slot : table_->slot) busy += __atomic_load_n(&slot.active, __ATOMIC_RELAXED) != 0;
  table_->busy = busy;
}

void PeerTable::SetBusy(bool busy, int64_t now_ns, int64_t busy_until_ns) {
  if (table_ == nullptr) return;
  VgpuSmPeerSlot& slot = table_->slot[slot_];
  if (busy && busy_until_ns > busy_until_ns_) {
    __atomic_store_n(&slot.busy_until_ns, busy_until_ns, __ATOMIC_RELAXED);
    busy_until_ns_ = busy_until_ns;
  }
  if (busy == busy_) return;
  Lock(now_ns);
  AdvanceLocked(now_ns);
  __atomic_store_n(&slot.active, busy ? 1 : 0, __ATOMIC_RELAXED);
  RecountLocked();
  Unlock();
  busy_ = busy;
  if (!busy) busy_until_ns_ = 0;
}

PeerCounts PeerTable::Count(int64_t now_ns) {
  if (table_ == nullptr) return {1, 0};
  if (now_ns - last_reap_ns_ >= kReapIntervalNs) Reap(now_ns);
  PeerCounts counts{__atomic_load_n(&table_->busy, __ATOMIC_RELAXED), 0};
  for (int32_t i = 0; i < VGPU_SM_PEER_SLOTS; ++i) {
    const VgpuSmPeerSlot& slot = table_->slot[i];
    if (i == slot_ || __atomic_load_n(&slot.active, __ATOMIC_RELAXED) == 0) continue;
    if (__atomic_load_n(&slot.priority, __ATOMIC_RELAXED) == 0) ++counts.high_busy;
  }
  if (counts.busy < 1) counts.busy = 1;
  return counts;
}

int64_t PeerTable::Clock(int64_t now_ns) {
  if (table_ == nullptr) return now_ns * 1000;
  if (now_ns - last_reap_ns_ >= kReapIntervalNs) Reap(now_ns);
  Lock(now_ns);
  AdvanceLocked(now_ns);
  int64_t clock = table_->clock_ps;
  Unlock();
  return clock;
}

void PeerTable::Reap(int64_t now_ns) {
  last_reap_ns_ = now_ns;
  bool stale[VGPU_SM_PEER_SLOTS] = {};
  bool any = false;
  for (int32_t i = 0; i < VGPU_SM_PEER_SLOTS; ++i) {
    if (i == slot_) continue;
    const VgpuSmPeerSlot& slot = table_->slot[i];
    if (__atomic_load_n(&slot.active, __ATOMIC_RELAXED) == 0) continue;
    // Dead owner (its lock is gone), or a live one that promised work that should long be done
    // and stopped submitting (a CPU phase): either way it no longer takes GPU slices.
    if (__atomic_load_n(&slot.busy_until_ns, __ATOMIC_RELAXED) < now_ns || !SlotOwnerAlive(fd_, i)) {
      stale[i] = true;
      any = true;
    }
  }
  if (!any) return;
  Lock(now_ns);
  AdvanceLocked(now_ns);
  for (int32_t i = 0; i < VGPU_SM_PEER_SLOTS; ++i) {
    if (stale[i]) __atomic_store_n(&table_->slot[i].active, 0, __ATOMIC_RELAXED);
  }
  RecountLocked();
  Unlock();
}

void PeerTable::ForgetAfterFork() {
  if (table_ != nullptr) munmap(table_, sizeof(VgpuSmPeerTable));
  if (fd_ >= 0) close(fd_);
  table_ = nullptr;
  fd_ = -1;
  slot_ = -1;
  busy_ = false;
  busy_until_ns_ = 0;
  last_reap_ns_ = 0;
}

}  // namespace vgpu::sm
