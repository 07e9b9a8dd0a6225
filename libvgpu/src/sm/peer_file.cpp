#include "peer_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vgpu::sm {
namespace {

bool LockSlotByte(int fd, int32_t slot) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = kPeerLockBase + slot;
  lock.l_len = 1;
  return fcntl(fd, F_SETLK, &lock) == 0;
}

// Creates the lock directory when it is missing (a plain LD_PRELOAD run without HAMi's mount),
// open to every user like /tmp, so that tenants of all containers and users can meet there.
// (open with O_DIRECTORY rather than stat: stat binds GLIBC_2.33, libvgpu loads into glibc 2.17.)
bool IsDirectory(const char* dir) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  return true;
}

bool EnsureParent(const char* dir) {
  if (IsDirectory(dir)) return true;
  char parent[512];
  const int n = snprintf(parent, sizeof(parent), "%s", dir);
  if (n <= 0 || n >= static_cast<int>(sizeof(parent))) return false;
  for (char* slash = parent + n - 1; slash > parent; --slash) {
    if (*slash == '/') {
      *slash = '\0';
      if (!EnsureParent(parent)) return false;
      break;
    }
  }
  return mkdir(dir, 0755) == 0 || errno == EEXIST;
}

bool EnsureDirectory(const char* dir) {
  if (IsDirectory(dir)) return true;
  char parent[512];
  const int n = snprintf(parent, sizeof(parent), "%s", dir);
  if (n <= 0 || n >= static_cast<int>(sizeof(parent))) return false;
  for (char* slash = parent + n - 1; slash > parent; --slash) {
    if (*slash == '/') {  // make the missing parents first (mkdir -p), with ordinary modes
      *slash = '\0';
      if (!IsDirectory(parent) && !EnsureParent(parent)) return false;
      break;
    }
  }
  if (mkdir(dir, 01777) != 0 && errno != EEXIST) return false;
  (void)chmod(dir, 01777);  // the umask cut the mode; failure only narrows who can join
  return IsDirectory(dir);
}

}  // namespace

bool PeerFile::Open(const char* dir, const char* uuid_hex, int32_t priority, const char** why) {
  if (file_ != nullptr) return true;
  char path[512];
  if (snprintf(path, sizeof(path), "%s/vgpu-gpu-%s", dir, uuid_hex) >=
      static_cast<int>(sizeof(path))) {
    *why = "the lock directory's path is too long";
    return false;
  }
  if (!EnsureDirectory(dir)) {
    *why = "the lock directory is missing and cannot be created";
    return false;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd >= 0) {
    (void)fchmod(fd, 0666);  // every container's processes must be able to join, whatever the umask
  } else if (errno == EEXIST) {
    fd = open(path, O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) {
    *why = "the GPU's file in the lock directory cannot be opened for writing";
    return false;
  }
  const auto size = static_cast<off_t>(sizeof(PeerFileLayout));
  const off_t current = lseek(fd, 0, SEEK_END);
  if (current < size && ftruncate(fd, size) != 0) {
    close(fd);
    *why = "the GPU's file in the lock directory cannot be grown";
    return false;
  }
  void* map = mmap(nullptr, sizeof(PeerFileLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    close(fd);
    *why = "the GPU's file in the lock directory cannot be mapped";
    return false;
  }
  auto* file = static_cast<PeerFileLayout*>(map);
  uint32_t expected = 0;
  __atomic_compare_exchange_n(&file->magic, &expected, kPeerMagic, false, __ATOMIC_ACQ_REL,
                              __ATOMIC_ACQUIRE);
  if (__atomic_load_n(&file->magic, __ATOMIC_ACQUIRE) != kPeerMagic) {
    munmap(map, sizeof(PeerFileLayout));
    close(fd);
    *why = "the GPU's file in the lock directory is not a vgpu file";
    return false;
  }
  __atomic_store_n(&file->version, kPeerVersion, __ATOMIC_RELAXED);
  __atomic_store_n(&file->slots, static_cast<uint32_t>(kPeerSlots), __ATOMIC_RELAXED);
  __atomic_store_n(&file->ring, static_cast<uint32_t>(kPeerRing), __ATOMIC_RELAXED);
  for (int32_t i = 0; i < kPeerSlots; ++i) {
    if (!LockSlotByte(fd, i)) continue;
    // Whoever had the slot before is dead (its lock is gone): start it over.
    PeerSlotHead& head = file->slot[i].head;
    __atomic_store_n(&head.active_until_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&head.turn_until_ns, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&head.turn_percent, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&head.published, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&head.priority, priority, __ATOMIC_RELAXED);
    __atomic_store_n(&head.pid, static_cast<int32_t>(getpid()), __ATOMIC_RELAXED);
    file_ = file;
    fd_ = fd;
    slot_ = i;
    return true;
  }
  munmap(map, sizeof(PeerFileLayout));
  close(fd);
  *why = "all 64 tenant slots of the GPU's file are taken";
  return false;
}

void PeerFile::SetActiveUntil(int64_t until_ns) {
  if (file_ == nullptr || until_ns == active_until_) return;
  active_until_ = until_ns;
  __atomic_store_n(&file_->slot[slot_].head.active_until_ns, until_ns, __ATOMIC_RELEASE);
}

void PeerFile::SetTurn(int64_t until_ns, int32_t percent) {
  if (file_ == nullptr) return;
  // A member refreshes its claim every pass (2 ms): write the shared line only every 20 ms.
  constexpr int64_t kRefreshNs = 20'000'000;
  if (until_ns != 0 && turn_until_ != 0 && until_ns - turn_until_ < kRefreshNs) return;
  if (until_ns == 0 && turn_until_ == 0) return;
  turn_until_ = until_ns;
  PeerSlotHead& head = file_->slot[slot_].head;
  __atomic_store_n(&head.turn_percent, percent, __ATOMIC_RELAXED);
  __atomic_store_n(&head.turn_until_ns, until_ns, __ATOMIC_RELEASE);
}

TurnSet PeerFile::Turns(int64_t now) const {
  TurnSet set{0, 0, 0, false};
  if (file_ == nullptr) return set;
  for (int32_t i = 0; i < kPeerSlots; ++i) {
    const PeerSlotHead& head = file_->slot[i].head;
    if (__atomic_load_n(&head.turn_until_ns, __ATOMIC_ACQUIRE) <= now) continue;
    const int32_t percent = __atomic_load_n(&head.turn_percent, __ATOMIC_RELAXED);
    if (percent <= 0 || percent >= 100) continue;
    ++set.members;
    set.sum_percent += percent;
    if (i < slot_) set.prefix_percent += percent;
    if (i == slot_) set.includes_me = true;
  }
  return set;
}

void PeerFile::Publish(const TimeSpan* spans, int n) {
  if (file_ == nullptr || n <= 0) return;
  PeerSlot& slot = file_->slot[slot_];
  uint64_t published = __atomic_load_n(&slot.head.published, __ATOMIC_RELAXED);
  if (n > kPeerRing) {  // only the newest fit
    spans += n - kPeerRing;
    n = kPeerRing;
  }
  for (int i = 0; i < n; ++i) {
    TimeSpan& entry = slot.ring[(published + static_cast<uint64_t>(i)) % kPeerRing];
    __atomic_store_n(&entry.start, spans[i].start, __ATOMIC_RELAXED);
    __atomic_store_n(&entry.end, spans[i].end, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&slot.head.published, published + static_cast<uint64_t>(n), __ATOMIC_RELEASE);
}

PeerScan PeerFile::Scan(int64_t now) const {
  PeerScan scan{0, false};
  if (file_ == nullptr) return scan;
  for (int32_t i = 0; i < kPeerSlots; ++i) {
    if (i == slot_) continue;
    const PeerSlotHead& head = file_->slot[i].head;
    if (__atomic_load_n(&head.active_until_ns, __ATOMIC_ACQUIRE) <= now) continue;
    ++scan.active;
    if (__atomic_load_n(&head.priority, __ATOMIC_RELAXED) == 0) scan.high_priority_active = true;
  }
  return scan;
}

int PeerFile::Collect(int64_t from, int64_t to, int64_t since_ns, OwnedSpan* out, int max) const {
  if (file_ == nullptr) return 0;
  // Spans arrive roughly in time order (a kernel's record is delivered after it ends, streams may
  // interleave): walking back from the newest, stop well before `from`.
  constexpr int64_t kOrderSlackNs = 200'000'000;
  int n = 0;
  for (int32_t i = 0; i < kPeerSlots && n < max; ++i) {
    if (i == slot_) continue;
    const PeerSlot& slot = file_->slot[i];
    if (__atomic_load_n(&slot.head.active_until_ns, __ATOMIC_ACQUIRE) <= since_ns) continue;
    const uint64_t published = __atomic_load_n(&slot.head.published, __ATOMIC_ACQUIRE);
    const uint64_t oldest = published > kPeerRing ? published - kPeerRing : 0;
    uint64_t index = published;
    while (index > oldest && n < max) {
      --index;
      const TimeSpan& entry = slot.ring[index % kPeerRing];
      const int64_t start = __atomic_load_n(&entry.start, __ATOMIC_RELAXED);
      const int64_t end = __atomic_load_n(&entry.end, __ATOMIC_RELAXED);
      // An entry the writer may have overwritten while we read it is not to be trusted, nor is
      // anything older.
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (__atomic_load_n(&slot.head.published, __ATOMIC_RELAXED) >= index + kPeerRing) break;
      if (end < from - kOrderSlackNs) break;
      if (end > from && start < to && end > start) out[n++] = OwnedSpan{start, end, i};
    }
  }
  return n;
}

void PeerFile::ForgetAfterFork() {
  if (file_ != nullptr) {
    munmap(file_, sizeof(PeerFileLayout));
    close(fd_);
  }
  file_ = nullptr;
  fd_ = 0;
  slot_ = 0;
  active_until_ = 0;
  turn_until_ = 0;
}

}  // namespace vgpu::sm
