#pragma once

// A container's folder (`<vgpu_dir>/containers/<pod-uid>_<container>`) is mounted read-write into
// the container: whatever runs there can fill it with files, links, FIFOs, device nodes and deep
// trees. What the monitor considers in one folder is bounded here, so that one container cannot
// take the monitor's memory, descriptors or tick time from the others; and what the monitor found
// in a folder becomes the container's state, shown to the operator (the snapshot's `containers`,
// the metric vgpu_container_region_state) instead of only a log line.

#include <cstddef>
#include <string>
#include <string_view>

#include "core/monitor/snapshot.h"

namespace vgpu::monitor {

// Entries of one container's folder read per listing. libvgpu makes one region file there
// (CUDA_DEVICE_MEMORY_SHARED_CACHE) and the runtime two mount points (libvgpu.so, ld.so.preload).
inline constexpr size_t kMaxFolderEntries = 256;
// `*.cache` files of one container tried as regions (mapped: 64 KiB of the monitor's memory and a
// descriptor each). The rest of them are ignored and the folder reported over its limits.
inline constexpr size_t kMaxRegionFiles = 4;
// Entries visited under one folder when the cleanup looks for its newest change, and directory
// levels below the folder it goes down (deeper changes are not looked for: a pod that is gone
// has no process left to make them).
inline constexpr size_t kMaxTreeEntriesVisited = 10'000;
inline constexpr int kMaxTreeDepth = 8;
// Entries removed per tick, over all the folders being removed: a folder of a million files is
// removed over many ticks instead of stopping one for seconds.
inline constexpr size_t kMaxRemovalsPerTick = 20'000;

// What the last look at a container's folder found.
struct FolderFindings {
  bool unreadable = false;          // the folder could not be opened or listed
  bool entries_truncated = false;   // more than kMaxFolderEntries entries: the rest was not read
  size_t region_files_ignored = 0;  // *.cache files beyond kMaxRegionFiles
  size_t usable = 0;                // regions mapped and read
  size_t pending = 0;               // region files being created (empty, no magic yet)
  size_t refused = 0;  // *.cache files that are no usable region: corrupt, foreign, links, ...
};

// The container's state: over_limits before unusable before pending before ok (the worst wins).
ContainerState DecideContainerState(const FolderFindings& f);

// The one log line (and the snapshot's `problem`) for a folder over its limits; "" when within.
std::string OverLimitsMessage(const FolderFindings& f);

// A name or message from a container's folder made safe for a log line, a JSON string and a
// terminal: bytes outside printable ASCII become \xNN, and more than `max_bytes` of input is cut
// with "...". File names there are chosen by the tenant: a newline would forge log lines, an
// escape sequence would drive the operator's terminal, invalid UTF-8 would break JSON.
std::string SafeText(std::string_view text, size_t max_bytes = 128);

}  // namespace vgpu::monitor
