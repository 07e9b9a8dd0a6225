#pragma once

// Whether a file is a region this monitor can read and write: its header against the layout of
// vgpu/region_layout.h, and the file's real size. A file in a container's directory is written by
// whatever runs in the container, so anything may be there: a truncated file, a file being
// created, HAMi-core's region, garbage. Each case gets its own message; the monitor skips the file.

#include <cstdint>
#include <span>
#include <string_view>

#include "core/base/status.h"
#include "vgpu/region_layout.h"

namespace vgpu::monitor {

// `header` holds the file's first bytes (zero-filled past the end of a short file); `file_size`
// is the file's size as fstat reports it. A file being created (empty, or full-sized with no magic
// yet) is Unavailable: it may become valid; every other problem is InvalidArgument.
Status ValidateRegionHeader(const vgpu_region_header& header, uint64_t file_size);

// The fields of a device record that the monitor passes on (snapshot, metric labels, the sharing
// decision), as read from the region.
struct DeviceRecordFields {
  std::string_view uuid;        // up to its NUL
  bool uuid_terminated = true;  // false: the UUID buffer held no NUL
  uint32_t sm_limit = 0;
  uint32_t sm_policy = 0;
};

// Records [0, device_count) of a region as libvgpu writes them: a UUID is NUL-terminated and
// either empty or an NVML UUID (letters, digits, '-'); no two records name the same GPU; sm_limit
// is a percent (0-100); sm_policy is a VGPU_SM_POLICY_*. Anything else was scribbled by the
// container: InvalidArgument ("corrupt: device record N: ..."), and the region is refused. A UUID
// goes into metric labels and JSON: bytes that are not UTF-8 would make Prometheus reject the
// node's whole page and the JSON API fail for every container.
Status ValidateDeviceRecords(std::span<const DeviceRecordFields> records);

}  // namespace vgpu::monitor
