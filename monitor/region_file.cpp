#include "monitor/region_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <system_error>

#include "core/monitor/region_header.h"
#include "monitor/mapping_guard.h"

namespace vgpu::monitor {
namespace {

template <typename T>
T Load(const T& field) {
  return __atomic_load_n(&field, __ATOMIC_RELAXED);
}

std::string Errno(const std::string& what) {
  return what + ": " + std::system_category().message(errno);
}

const char* KindOf(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFDIR:
      return "a directory";
    case S_IFIFO:
      return "a FIFO";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFSOCK:
      return "a socket";
    default:
      return "not a regular file";
  }
}

// A region is a regular file with one name. A link is never followed (it may point anywhere on
// the host, another container's region included); anything else is never opened. A second name
// (hard link) could only be made inside the same folder (link(2) does not cross the container's
// bind mount): a region read under two names would be counted twice.
Status CheckRegionFileType(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) {
    return InvalidArgument(
        "a symbolic link, not a region (links in a container's folder are "
        "never followed)");
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgument(std::string("not a regular file (") + KindOf(st.st_mode) + ")");
  }
  if (st.st_nlink != 1) {
    return InvalidArgument("has " + std::to_string(st.st_nlink) +
                           " names (hard links); a region file has one");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<RegionFile>> RegionFile::Open(int dir_fd, const std::string& name) {
  // O_PATH: the name is looked up without opening what it names. Opening a FIFO could block, and
  // opening a device node the container planted (it may hold CAP_MKNOD; the device cgroup that
  // keeps it from opening the node does not bind the monitor) could act on the host's device: a
  // watchdog started, a tape rewound. Only a regular file, seen through this descriptor, is opened.
  UniqueFd path_fd(::openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!path_fd.valid()) {
    if (errno == ENOENT) return NotFound("gone");
    return Unavailable(Errno("cannot open"));
  }
  struct stat st {};
  if (::fstat(path_fd.get(), &st) != 0) return Unavailable(Errno("cannot stat"));
  VGPU_RETURN_IF_ERROR(CheckRegionFileType(st));
  // The same inode, opened for reading and writing through the descriptor: no second lookup of
  // the name, which the container may have replaced meanwhile.
  const std::string self = "/proc/self/fd/" + std::to_string(path_fd.get());
  UniqueFd fd(::open(self.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return Unavailable(Errno("cannot open through " + self));
  struct stat opened {};
  if (::fstat(fd.get(), &opened) != 0) return Unavailable(Errno("cannot stat"));
  if (opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
    return Unavailable("replaced while it was opened");
  }
  VGPU_RETURN_IF_ERROR(CheckRegionFileType(opened));
  vgpu_region_header header{};
  const ssize_t n = ::pread(fd.get(), &header, sizeof header, 0);
  if (n < 0) return Unavailable(Errno("cannot read"));
  VGPU_RETURN_IF_ERROR(ValidateRegionHeader(header, static_cast<uint64_t>(opened.st_size)));
  void* map = ::mmap(nullptr, sizeof(vgpu_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return Unavailable(Errno("cannot map"));
  if (!GuardMapping(map, sizeof(vgpu_region))) {
    (void)::munmap(map, sizeof(vgpu_region));
    return ResourceExhausted("too many region files mapped at once to guard them all");
  }
  const FileId id{major(st.st_dev), minor(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  std::unique_ptr<RegionFile> file(
      new RegionFile(std::move(fd), static_cast<vgpu_region*>(map), id, st.st_dev, st.st_ino));
  // The device records too, before anything is read from them.
  VGPU_RETURN_IF_ERROR(file->CheckContent());
  return file;
}

RegionFile::RegionFile(UniqueFd fd, vgpu_region* region, FileId id, dev_t dev, ino_t ino)
    : fd_(std::move(fd)), region_(region), id_(id), dev_(dev), ino_(ino) {}

RegionFile::~RegionFile() {
  UnguardMapping(region_);
  (void)::munmap(region_, sizeof(vgpu_region));
}

Status RegionFile::Check(int dir_fd, const std::string& name) const {
  struct stat at_path {};
  if (::fstatat(dir_fd, name.c_str(), &at_path, AT_SYMLINK_NOFOLLOW) != 0) {
    return NotFound(Errno("gone"));
  }
  if (at_path.st_dev != dev_ || at_path.st_ino != ino_) return NotFound("replaced by another file");
  return CheckContent();
}

Status RegionFile::CheckContent() const {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0) return Unavailable(Errno("cannot stat"));
  if (static_cast<uint64_t>(st.st_size) != sizeof(vgpu_region)) {
    return InvalidArgument("size changed to " + std::to_string(st.st_size) + " bytes");
  }
  // The header may have been overwritten since it was checked: copy it with atomic loads.
  const vgpu_region_header& h = region_->header;
  vgpu_region_header copy{};
  copy.magic = Load(h.magic);
  copy.version = Load(h.version);
  copy.header_size = Load(h.header_size);
  copy.file_size = Load(h.file_size);
  copy.max_devices = Load(h.max_devices);
  copy.max_procs = Load(h.max_procs);
  copy.device_count = Load(h.device_count);
  copy.flags = Load(h.flags);
  VGPU_RETURN_IF_ERROR(ValidateRegionHeader(copy, static_cast<uint64_t>(st.st_size)));
  if (st.st_nlink != 1) return CheckRegionFileType(st);
  // The device records whose figures and UUIDs the tick passes on.
  std::vector<RegionDevice> devices;
  for (uint32_t d = 0; d < copy.device_count; ++d) devices.push_back(Device(d));
  return ValidateDevices(devices);
}

Status ValidateDevices(std::span<const RegionDevice> devices) {
  std::array<DeviceRecordFields, VGPU_REGION_MAX_DEVICES> records{};
  const size_t count = std::min<size_t>(devices.size(), VGPU_REGION_MAX_DEVICES);
  for (size_t d = 0; d < count; ++d) {
    records[d] = DeviceRecordFields{devices[d].uuid, devices[d].uuid_terminated,
                                    devices[d].sm_limit, devices[d].sm_policy};
  }
  return ValidateDeviceRecords(std::span<const DeviceRecordFields>(records.data(), count));
}

uint32_t RegionFile::DeviceCount() const {
  const uint32_t n = __atomic_load_n(&region_->header.device_count, __ATOMIC_ACQUIRE);
  return n > VGPU_REGION_MAX_DEVICES ? VGPU_REGION_MAX_DEVICES : n;
}

RegionDevice RegionFile::Device(uint32_t index) const {
  const vgpu_region_device& d = region_->devices[index];
  RegionDevice out;
  // The UUID is written once, before device_count counts the record; it may lack its NUL.
  char uuid[VGPU_REGION_UUID_LEN];
  for (size_t i = 0; i < sizeof uuid; ++i) uuid[i] = Load(d.uuid[i]);
  out.uuid.assign(uuid, strnlen(uuid, sizeof uuid));
  out.uuid_terminated = out.uuid.size() < sizeof uuid;
  out.mem_limit = Load(d.mem_limit);
  out.mem_physical = Load(d.mem_physical);
  out.mem_used = Load(d.mem_used);
  out.sm_limit = Load(d.sm_limit);
  out.flags = Load(d.flags);
  out.sm_policy = Load(d.sm_policy);
  out.sm_sharing = Load(d.sm_sharing);
  out.sm_busy_ns = Load(d.sm_busy_ns);
  return out;
}

RegionSlot RegionFile::Slot(int index) const {
  const vgpu_region_proc& p = region_->procs[index];
  RegionSlot out;
  const int32_t pid = __atomic_load_n(&p.pid, __ATOMIC_ACQUIRE);
  if (pid <= 0 || __atomic_load_n(&p.status, __ATOMIC_ACQUIRE) != VGPU_SLOT_ACTIVE) return out;
  out.pid = pid;
  out.start_time = Load(p.start_time);
  out.host_pid = Load(p.host_pid);
  out.host_start_time = Load(p.host_start_time);
  for (size_t d = 0; d < VGPU_REGION_MAX_DEVICES; ++d) {
    out.mem_used[d] = Load(p.mem_used[d]);
    out.mem_overhead[d] = Load(p.mem_overhead[d]);
    out.last_kernel_ns[d] = Load(p.sm_last_kernel_ns[d]);
  }
  return out;
}

SlotIdentity RegionFile::Identity(int index) const {
  const vgpu_region_proc& p = region_->procs[index];
  SlotIdentity out;
  const int32_t pid = __atomic_load_n(&p.pid, __ATOMIC_ACQUIRE);
  if (pid <= 0) return out;
  out.pid = pid;
  if (__atomic_load_n(&p.status, __ATOMIC_ACQUIRE) == VGPU_SLOT_ACTIVE) {
    out.start_time = Load(p.start_time);
  }
  return out;
}

std::vector<int> RegionFile::OccupiedSlots() const {
  std::vector<int> out;
  // In chunks of whole slots: 96 slots, 62 KiB.
  constexpr size_t kChunkSlots = 96;
  constexpr size_t kSlots = VGPU_REGION_MAX_PROCS;
  std::vector<vgpu_region_proc> chunk(kChunkSlots);
  for (size_t first = 0; first < kSlots; first += kChunkSlots) {
    const size_t n = std::min(kChunkSlots, kSlots - first);
    const auto at =
        static_cast<off_t>(offsetof(vgpu_region, procs) + first * sizeof(vgpu_region_proc));
    const size_t want = n * sizeof(vgpu_region_proc);
    ssize_t got = 0;
    do {
      got = ::pread(fd_.get(), chunk.data(), want, at);
    } while (got < 0 && errno == EINTR);
    if (got != static_cast<ssize_t>(want)) {
      // Short (truncated meanwhile: the next check drops the file) or failed: read these slots
      // through the mapping instead.
      for (size_t i = first; i < first + n; ++i) {
        if (Identity(static_cast<int>(i)).pid != 0) out.push_back(static_cast<int>(i));
      }
      continue;
    }
    for (size_t i = 0; i < n; ++i) {
      if (chunk[i].pid != 0) out.push_back(static_cast<int>(first + i));
    }
  }
  return out;
}

void RegionFile::WriteSharing(uint32_t device, int32_t flag) {
  __atomic_store_n(&region_->devices[device].sm_sharing, flag, __ATOMIC_RELAXED);
}

void RegionFile::WriteHostPid(int slot, int32_t host_pid, uint64_t start_time) {
  vgpu_region_proc& p = region_->procs[slot];
  __atomic_store_n(&p.host_pid, host_pid, __ATOMIC_RELAXED);
  __atomic_store_n(&p.host_start_time, start_time, __ATOMIC_RELEASE);
}

}  // namespace vgpu::monitor
