#pragma once

// Whether a file is a region this monitor can read and write: its header against the layout of
// vgpu/region_layout.h, and the file's real size. A file in a container's directory is written by
// whatever runs in the container, so anything may be there: a truncated file, a file being
// created, HAMi-core's region, garbage. Each case gets its own message; the monitor skips the file.

#include <cstdint>

#include "core/base/status.h"
#include "vgpu/region_layout.h"

namespace vgpu::monitor {

// `header` holds the file's first bytes (zero-filled past the end of a short file); `file_size`
// is the file's size as fstat reports it.
Status ValidateRegionHeader(const vgpu_region_header& header, uint64_t file_size);

}  // namespace vgpu::monitor
