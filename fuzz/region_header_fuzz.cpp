// The shared region file's header, as the two readers of a container's region file meet it:
// libvgpu (libvgpu/src/region.c, vgpu_region_open: use the file or fall back to a private region)
// and the node monitor (core/monitor/region_header.cpp, ValidateRegionHeader: read the file or
// skip it). Whatever runs in a container can write anything there.
//
// Input: the header's bytes (zero-filled when short), then one byte choosing the file's size
// (0: a region's size; otherwise the next 4 bytes, little-endian, up to twice a region's size),
// then the UUID of a device to register when libvgpu maps the file.
// Properties: both readers agree on a laid-out header (magic not 0): the monitor reads a file
// exactly when libvgpu uses it (except one marked unusable, which libvgpu refuses and the monitor
// reads to show it); and a file libvgpu used survives a device registration and an admission.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/monitor/region_header.h"
#include "fuzz_check.h"
#include "region.h"

// libvgpu's log (log.c) writes every refused file to stderr; the fuzzer's own output stays there.
extern "C" void vgpu_log(int /*level*/, const char* /*fmt*/, ...) {}

namespace {

constexpr uint64_t kRegionSize = sizeof(vgpu_region);

// A plain file: libvgpu opens the region by name with O_NOFOLLOW and refuses anything else (a
// /proc/self/fd/ link to a memfd included).
const std::string& RegionPath() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/vgpu-fuzz-region.XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    return std::string(tmpl);
  }();
  return path;
}

int RegionFd() {
  static const int fd = open(RegionPath().c_str(), O_RDWR | O_CLOEXEC);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vgpu_region_header header{};
  std::memcpy(&header, data, std::min(size, sizeof header));
  size_t at = std::min(size, sizeof header);
  uint64_t file_size = kRegionSize;
  if (at < size && data[at++] != 0) {
    uint32_t chosen = 0;
    const size_t n = std::min<size_t>(size - at, sizeof chosen);
    std::memcpy(&chosen, data + at, n);
    at += n;
    file_size = chosen % (2 * kRegionSize + 1);
  }
  const std::string uuid(reinterpret_cast<const char*>(data) + at, size - at);

  const int fd = RegionFd();
  if (fd < 0 || ftruncate(fd, 0) != 0 || ftruncate(fd, static_cast<off_t>(file_size)) != 0) {
    return 0;
  }
  const size_t written = static_cast<size_t>(std::min<uint64_t>(file_size, sizeof header));
  if (pwrite(fd, &header, written, 0) != static_cast<ssize_t>(written)) return 0;
  vgpu_region_header seen{};  // what the monitor reads: the file's first bytes, zero-filled
  std::memcpy(&seen, &header, written);
  const vgpu::Status monitor = vgpu::monitor::ValidateRegionHeader(seen, file_size);

  const std::string& path = RegionPath();
  vgpu_region_handle h{};
  if (vgpu_region_open(path.c_str(), &h) != 0) return 0;
  const bool used = h.is_private == 0;
  // A region a libvgpu process marked unusable (VGPU_REGION_FLAG_UNUSABLE) is refused by the next
  // ones (they fail closed) while the monitor still reads it, to show it.
  const bool marked = (header.flags & VGPU_REGION_FLAG_UNUSABLE) != 0;
  if (monitor.ok() && !marked) {
    vgpu::fuzz::Check(used, "the monitor reads a region libvgpu refuses");
  }
  if (used && header.magic != 0 && file_size != 0) {
    vgpu::fuzz::Check(monitor.ok(), "libvgpu uses a region the monitor skips", monitor.message());
  }
  if (used) {
    const int dev = vgpu_region_register_device(&h, uuid.c_str(), 1ULL << 30, 1ULL << 29, 50,
                                                VGPU_SM_POLICY_DEFAULT);
    if (dev >= 0 && vgpu_region_claim_slot(&h, static_cast<int>(getpid()), 1, 0) == 0) {
      if (vgpu_region_reserve(&h, dev, 4096) == 0) vgpu_region_release(&h, dev, 4096);
      vgpu_region_release_slot(&h);
    }
  }
  munmap(h.region, kRegionSize);
  if (h.fd >= 0) close(h.fd);
  return 0;
}
