#pragma once

// What the monitor learns about one host process from /proc (proc_parse.h parses it, the monitor's
// proc table reads it): enough to tell which region slot it owns.

#include <compare>
#include <cstdint>
#include <vector>

namespace vgpu::monitor {

// A file as /proc/<pid>/maps names it: device major:minor and inode.
struct FileId {
  uint32_t major = 0;
  uint32_t minor = 0;
  uint64_t inode = 0;
  friend auto operator<=>(const FileId&, const FileId&) = default;
};

struct HostProcess {
  int32_t host_pid = 0;
  // NSpid of /proc/<pid>/status: the PID in each namespace, outermost (the host's) first; the
  // last entry is the PID in the process's own namespace, the one libvgpu writes into its slot.
  std::vector<int32_t> ns_pids;
  uint64_t start_time = 0;     // field 22 of /proc/<pid>/stat
  bool maps_read = false;      // /proc/<pid>/maps could be read (false: `mapped` is unknown)
  std::vector<FileId> mapped;  // region files (of those asked about) the process maps
};

}  // namespace vgpu::monitor
