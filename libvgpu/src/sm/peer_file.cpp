#include "peer_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace vgpu::sm {
namespace {

static_assert(sizeof(PeerFileHeader) == 64 && sizeof(PeerSlotHead) == 64, "the file's layout");

constexpr uint64_t kHeadsOffset = offsetof(PeerFileLayout, head);
constexpr uint64_t kRingsOffset = offsetof(PeerFileLayout, ring);

uint64_t HeadOffset(int32_t slot) {
  return kHeadsOffset + static_cast<uint64_t>(slot) * sizeof(PeerSlotHead);
}

uint64_t EntryOffset(int32_t slot, uint64_t index) {
  return kRingsOffset + (static_cast<uint64_t>(slot) * kPeerRing + index % kPeerRing) *
                            static_cast<uint64_t>(sizeof(TimeSpan));
}

// A raw syscall: glibc's fstat wrapper binds GLIBC_2.33, and libvgpu loads into glibc 2.17 images.
bool Stat(int fd, struct stat* st) {
  return syscall(SYS_fstat, fd, st) == 0;
}

// Reads `size` bytes at `offset`; whatever the file no longer holds reads as zeros.
void ReadAt(int fd, void* out, uint64_t size, uint64_t offset) {
  auto* bytes = static_cast<char*>(out);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  if (done < size) memset(bytes + done, 0, size - done);
}

void WriteAt(int fd, const void* data, uint64_t size, uint64_t offset) {
  const auto* bytes = static_cast<const char*>(data);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk: the others see less of us (conservative for them)
    done += static_cast<uint64_t>(n);
  }
}

bool LockSlotByte(int fd, int32_t slot) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = kPeerLockBase + slot;
  lock.l_len = 1;
  return fcntl(fd, F_SETLK, &lock) == 0;
}

// Makes the missing parents of a lock directory given by VGPU_SM_PEER_DIR (mkdir -p), with
// ordinary modes. (open with O_DIRECTORY rather than stat: stat binds GLIBC_2.33.)
bool IsDirectory(const char* dir) {
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  return true;
}

bool EnsureParents(const char* dir) {
  char parent[512];
  const int n = snprintf(parent, sizeof(parent), "%s", dir);
  if (n <= 0 || n >= static_cast<int>(sizeof(parent))) return false;
  for (char* slash = parent + n - 1; slash > parent; --slash) {
    if (*slash == '/') {
      *slash = '\0';
      if (IsDirectory(parent)) return true;
      if (!EnsureParents(parent)) return false;
      return mkdir(parent, 0755) == 0 || errno == EEXIST;
    }
  }
  return true;
}

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// Opens the lock directory, creating it (1777, like /tmp: tenants of all containers and users meet
// there) when it is missing, as a plain LD_PRELOAD run without HAMi's mount finds it. Refuses a
// symbolic link (O_NOFOLLOW) and a directory that others may write to without the sticky bit
// unless root or we own it. -1 with `why` set when refused.
int OpenLockDirectory(const char* dir, const char** why) {
  int fd = open(dir, kDirFlags);
  if (fd < 0 && errno == ENOENT) {
    const bool made = EnsureParents(dir) && mkdir(dir, 01777) == 0;
    fd = open(dir, kDirFlags);
    // The umask cut the mode of the directory we made; fchmod on what we opened, never chmod on
    // the path (which someone could have swapped for a link meanwhile). Failure only narrows who
    // can join.
    struct stat st {};
    if (made && fd >= 0 && Stat(fd, &st) && st.st_uid == geteuid()) (void)fchmod(fd, 01777);
  }
  if (fd < 0) {
    *why = errno == ELOOP || errno == ENOTDIR
               ? "the lock directory is a symbolic link or not a directory (refused)"
               : "the lock directory is missing and cannot be created";
    return -1;
  }
  struct stat st {};
  if (!Stat(fd, &st) || !S_ISDIR(st.st_mode)) {
    close(fd);
    *why = "the lock directory cannot be examined";
    return -1;
  }
  const bool others_write = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  if (others_write && (st.st_mode & S_ISVTX) == 0 && st.st_uid != 0 && st.st_uid != geteuid()) {
    close(fd);
    *why =
        "the lock directory belongs to another user and others may replace files in it (no "
        "sticky bit; refused: make it root's, mode 1777)";
    return -1;
  }
  return fd;
}

// Opens (or creates) `name` under the directory `dir_fd`: a regular file with one name, of the
// layout's size or empty. -1 with `why` set when refused. The owner is not checked: the file is
// created by whichever tenant of the node came first, under any uid; the sticky bit keeps others
// from replacing it, and what its owner could do more than any tenant (chmod it) only locks
// tenants out, who are then charged in full.
int OpenGpuFile(int dir_fd, const char* name, const char** why) {
  const int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  int fd = openat(dir_fd, name, flags | O_CREAT | O_EXCL, 0666);
  if (fd >= 0) {
    (void)fchmod(fd, 0666);  // every container's processes must be able to join, whatever the umask
  } else if (errno == EEXIST) {
    fd = openat(dir_fd, name, flags);
  }
  if (fd < 0) {
    *why = errno == ELOOP ? "the GPU's file in the lock directory is a symbolic link (refused)"
                          : "the GPU's file in the lock directory cannot be opened for writing";
    return -1;
  }
  struct stat st {};
  const auto size = static_cast<off_t>(sizeof(PeerFileLayout));
  if (!Stat(fd, &st) || !S_ISREG(st.st_mode)) {
    *why = "the GPU's file in the lock directory is not a regular file (refused)";
  } else if (st.st_nlink != 1) {
    *why = "the GPU's file in the lock directory has other names (a hard link? refused)";
  } else if (st.st_size != 0 && st.st_size != size) {
    *why = "the GPU's file in the lock directory has another size than a vgpu file (refused)";
  } else if (st.st_size == 0 && ftruncate(fd, size) != 0) {
    *why = "the GPU's file in the lock directory cannot be grown";
  } else {
    return fd;
  }
  close(fd);
  return -1;
}

}  // namespace

bool PeerFile::Open(const char* dir, const char* uuid_hex, int32_t priority, const char** why) {
  if (open_) return true;
  if (dir[0] == '\0') {
    *why = "no usable lock directory is configured";
    return false;
  }
  char name[96];
  size_t hex = 0;
  while (uuid_hex[hex] != '\0' && ((uuid_hex[hex] >= '0' && uuid_hex[hex] <= '9') ||
                                   (uuid_hex[hex] >= 'a' && uuid_hex[hex] <= 'f'))) {
    ++hex;
  }
  if (hex == 0 || uuid_hex[hex] != '\0' ||
      snprintf(name, sizeof(name), "vgpu-gpu4-%s", uuid_hex) >= static_cast<int>(sizeof(name))) {
    *why = "the GPU's UUID is not hex";
    return false;
  }
  const int dir_fd = OpenLockDirectory(dir, why);
  if (dir_fd < 0) return false;
  const int fd = OpenGpuFile(dir_fd, name, why);
  close(dir_fd);
  if (fd < 0) return false;
  PeerFileHeader header{};
  ReadAt(fd, &header, sizeof(header), 0);
  if (header.magic == 0) {  // new: whoever writes it first writes the same bytes
    header = PeerFileHeader{kPeerMagic, kPeerVersion, kPeerSlots, kPeerRing, {}};
    WriteAt(fd, &header, sizeof(header), 0);
  } else if (header.magic != kPeerMagic || header.version != kPeerVersion) {
    close(fd);
    *why = "the GPU's file in the lock directory is not a vgpu file of this version";
    return false;
  }
  for (int32_t i = 0; i < kPeerSlots; ++i) {
    if (!LockSlotByte(fd, i)) continue;
    // Whoever had the slot before is dead (its lock is gone): start it over.
    PeerSlotHead head{};
    head.pid = static_cast<int32_t>(getpid());
    head.priority = priority;
    WriteAt(fd, &head, sizeof(head), HeadOffset(i));
    open_ = true;
    fd_ = fd;
    slot_ = i;
    published_ = 0;
    return true;
  }
  close(fd);
  *why = "all 64 tenant slots of the GPU's file are taken";
  return false;
}

void PeerFile::WriteOwn(uint64_t offset_in_head, const void* value, uint64_t size) const {
  WriteAt(fd_, value, size, HeadOffset(slot_) + offset_in_head);
}

void PeerFile::ReadHeads(PeerSlotHead* heads) const {
  ReadAt(fd_, heads, sizeof(PeerSlotHead) * kPeerSlots, kHeadsOffset);
}

void PeerFile::SetActiveUntil(int64_t until_ns) {
  if (!open_ || until_ns == active_until_) return;
  active_until_ = until_ns;
  WriteOwn(offsetof(PeerSlotHead, active_until_ns), &until_ns, sizeof(until_ns));
}

void PeerFile::SetTurn(int64_t until_ns, int32_t percent) {
  if (!open_) return;
  // A member refreshes its claim every pass (2 ms): write it only every 20 ms.
  constexpr int64_t kRefreshNs = 20'000'000;
  if (until_ns != 0 && turn_until_ != 0 && until_ns - turn_until_ < kRefreshNs) return;
  if (until_ns == 0 && turn_until_ == 0) return;
  turn_until_ = until_ns;
  WriteOwn(offsetof(PeerSlotHead, turn_percent), &percent, sizeof(percent));
  WriteOwn(offsetof(PeerSlotHead, turn_until_ns), &until_ns, sizeof(until_ns));
}

TurnSet PeerFile::Turns(int64_t now) const {
  TurnSet set{0, 0, 0, false};
  if (!open_) return set;
  PeerSlotHead heads[kPeerSlots];
  ReadHeads(heads);
  for (int32_t i = 0; i < kPeerSlots; ++i) {
    if (heads[i].turn_until_ns <= now) continue;
    const int32_t percent = heads[i].turn_percent;
    if (percent <= 0 || percent >= 100) continue;  // 64 × 99 cannot overflow the sums
    ++set.members;
    set.sum_percent += percent;
    if (i < slot_) set.prefix_percent += percent;
    if (i == slot_) set.includes_me = true;
  }
  return set;
}

void PeerFile::Publish(const TimeSpan* spans, int n) {
  if (!open_ || n <= 0) return;
  if (n > kPeerRing) {  // only the newest fit
    spans += n - kPeerRing;
    n = kPeerRing;
  }
  // At most two runs: up to the ring's end, then from its start.
  const auto first = static_cast<int>(published_ % kPeerRing);
  const int run = n < kPeerRing - first ? n : kPeerRing - first;
  WriteAt(fd_, spans, sizeof(TimeSpan) * static_cast<uint64_t>(run),
          EntryOffset(slot_, published_));
  if (run < n) {
    WriteAt(fd_, spans + run, sizeof(TimeSpan) * static_cast<uint64_t>(n - run),
            EntryOffset(slot_, 0));
  }
  published_ += static_cast<uint64_t>(n);
  WriteOwn(offsetof(PeerSlotHead, published), &published_, sizeof(published_));
}

PeerScan PeerFile::Scan(int64_t now) const {
  PeerScan scan{0, false};
  if (!open_) return scan;
  PeerSlotHead heads[kPeerSlots];
  ReadHeads(heads);
  for (int32_t i = 0; i < kPeerSlots; ++i) {
    if (i == slot_ || heads[i].active_until_ns <= now) continue;
    ++scan.active;
    if (heads[i].priority == 0) scan.high_priority_active = true;
  }
  return scan;
}

int PeerFile::Collect(int64_t from, int64_t to, int64_t since_ns, OwnedSpan* out, int max) const {
  if (!open_) return 0;
  // Spans arrive roughly in time order (a kernel's record is delivered after it ends, streams may
  // interleave): walking back from the newest, stop well before `from`.
  constexpr int64_t kOrderSlackNs = 200'000'000;
  constexpr int kChunk = 256;  // entries read at once
  const int64_t oldest_end = from > INT64_MIN + kOrderSlackNs ? from - kOrderSlackNs : INT64_MIN;
  PeerSlotHead heads[kPeerSlots];
  ReadHeads(heads);
  TimeSpan chunk[kChunk];
  int n = 0;
  for (int32_t i = 0; i < kPeerSlots && n < max; ++i) {
    if (i == slot_ || heads[i].active_until_ns <= since_ns) continue;
    const uint64_t published = heads[i].published;
    const uint64_t oldest = published > kPeerRing ? published - kPeerRing : 0;
    uint64_t index = published;  // entries [oldest, index) are still to be read
    bool done = false;
    while (!done && index > oldest && n < max) {
      const uint64_t want = index - oldest < kChunk ? index - oldest : kChunk;
      const uint64_t low = index - want;
      // [low, index) in the ring: at most two runs.
      const uint64_t first = low % kPeerRing;
      const uint64_t run = want < kPeerRing - first ? want : kPeerRing - first;
      ReadAt(fd_, chunk, run * sizeof(TimeSpan), EntryOffset(i, low));
      if (run < want) ReadAt(fd_, chunk + run, (want - run) * sizeof(TimeSpan), EntryOffset(i, 0));
      // Entries the writer may have overwritten while we read them are not to be trusted, nor is
      // anything older.
      uint64_t now_published = 0;
      ReadAt(fd_, &now_published, sizeof(now_published),
             HeadOffset(i) + offsetof(PeerSlotHead, published));
      for (uint64_t k = want; k > 0 && n < max; --k) {
        const uint64_t entry_index = low + k - 1;
        if (now_published - entry_index >= kPeerRing && now_published >= entry_index) {
          done = true;
          break;
        }
        const TimeSpan& e = chunk[k - 1];
        if (e.end < oldest_end) {
          done = true;
          break;
        }
        // Another tenant's span is data, not a kernel's record until it looks like one.
        if (e.end <= e.start || static_cast<uint64_t>(e.end) - static_cast<uint64_t>(e.start) >
                                    static_cast<uint64_t>(kPeerMaxSpanNs)) {
          continue;
        }
        if (e.end > from && e.start < to) out[n++] = OwnedSpan{e.start, e.end, i};
      }
      index = low;
    }
  }
  return n;
}

void PeerFile::ForgetAfterFork() {
  if (open_) close(fd_);
  open_ = false;
  fd_ = 0;
  slot_ = 0;
  published_ = 0;
  active_until_ = 0;
  turn_until_ = 0;
}

}  // namespace vgpu::sm
