#include "core/monitor/region_header.h"

#include <cstdio>
#include <string>

#include "core/monitor/container_folder.h"

namespace vgpu::monitor {
namespace {

// HAMi-core's region starts with this int32 (pkg/monitor/nvidia: 19920718).
constexpr uint32_t kHamiCoreMagic = 19920718;

std::string Hex(uint64_t v) {
  char buf[32];
  (void)std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Status ValidateRegionHeader(const vgpu_region_header& h, uint64_t file_size) {
  constexpr uint64_t kRegionSize = sizeof(vgpu_region);
  if (file_size == 0) return Unavailable("empty (being created, or its creator died)");
  if (file_size < sizeof(vgpu_region_header)) {
    return InvalidArgument("truncated: " + std::to_string(file_size) + " bytes, a region has " +
                           std::to_string(kRegionSize));
  }
  if (h.magic == 0) {
    return Unavailable("not laid out yet (no magic: being created, or its creator died)");
  }
  if (static_cast<uint32_t>(h.magic) == kHamiCoreMagic) {
    return InvalidArgument("a HAMi-core region (magic 19920718), not vgpu's");
  }
  if (h.magic != VGPU_REGION_MAGIC) {
    return InvalidArgument("not a vgpu region (magic " + Hex(h.magic) + ", expected " +
                           Hex(VGPU_REGION_MAGIC) + ")");
  }
  if (h.version != VGPU_REGION_VERSION) {
    return InvalidArgument("region version " + std::to_string(h.version) +
                           ", this monitor reads version " + std::to_string(VGPU_REGION_VERSION));
  }
  if (h.header_size != sizeof(vgpu_region_header)) {
    return InvalidArgument("header size " + std::to_string(h.header_size) + ", expected " +
                           std::to_string(sizeof(vgpu_region_header)));
  }
  if (h.file_size != kRegionSize) {
    return InvalidArgument("header gives file size " + std::to_string(h.file_size) + ", expected " +
                           std::to_string(kRegionSize));
  }
  if (h.max_devices != VGPU_REGION_MAX_DEVICES || h.max_procs != VGPU_REGION_MAX_PROCS) {
    return InvalidArgument("header gives " + std::to_string(h.max_devices) + " devices and " +
                           std::to_string(h.max_procs) + " process slots, expected " +
                           std::to_string(VGPU_REGION_MAX_DEVICES) + " and " +
                           std::to_string(VGPU_REGION_MAX_PROCS));
  }
  if (h.device_count > VGPU_REGION_MAX_DEVICES) {
    return InvalidArgument("corrupt: device_count " + std::to_string(h.device_count) + " exceeds " +
                           std::to_string(VGPU_REGION_MAX_DEVICES));
  }
  if ((h.flags & VGPU_REGION_FLAG_UNUSABLE) != 0) {
    return InvalidArgument(
        "corrupt: libvgpu found it so and marked it unusable; the container's processes refuse "
        "GPU memory allocations until it restarts");
  }
  if (file_size != kRegionSize) {
    return InvalidArgument((file_size < kRegionSize ? "truncated: " : "oversized: ") +
                           std::to_string(file_size) + " bytes, a region has " +
                           std::to_string(kRegionSize));
  }
  return Status::Ok();
}

Status ValidateDeviceRecords(std::span<const DeviceRecordFields> records) {
  for (size_t d = 0; d < records.size(); ++d) {
    const DeviceRecordFields& r = records[d];
    const std::string where = "corrupt: device record " + std::to_string(d) + ": ";
    if (!r.uuid_terminated) return InvalidArgument(where + "UUID without an end");
    const std::string_view uuid = r.uuid;
    for (const char c : uuid) {
      const bool ok =
          (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      if (!ok)
        return InvalidArgument(where + "UUID \"" + SafeText(uuid, 96) + "\" is no NVML UUID");
    }
    for (size_t e = 0; e < d && !uuid.empty(); ++e) {
      if (records[e].uuid == uuid) {
        return InvalidArgument(where + "names the GPU of record " + std::to_string(e) + " again");
      }
    }
    if (r.sm_limit > 100) {
      return InvalidArgument(where + "SM limit " + std::to_string(r.sm_limit) + " %");
    }
    if (r.sm_policy > VGPU_SM_POLICY_MPS) {
      return InvalidArgument(where + "SM policy " + std::to_string(r.sm_policy));
    }
  }
  return Status::Ok();
}

}  // namespace vgpu::monitor
