#pragma once

// Directory walking for the containers directory, relative to open directory descriptors and
// never following a symbolic link: the containers' directories are writable from inside the
// containers, so any entry may be a link planted to point elsewhere on the host, and a folder may
// hold any number of entries, nested to any depth. Every walk here is bounded: in entries read,
// in directories open at once, in work per call.

#include <sys/stat.h>

#include <chrono>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "monitor/unique_fd.h"

namespace vgpu::monitor {

struct DirEntry {
  std::string name;
  mode_t type = 0;  // S_IFDIR, S_IFREG, S_IFLNK, ... (of the entry itself, not a link's target)
};

struct DirListing {
  std::vector<DirEntry> entries;  // sorted by name
  bool truncated = false;         // the directory holds more than the entries asked for
};

// Opens directory `name` in `parent_fd` (AT_FDCWD: a path); refuses a symbolic link.
Result<UniqueFd> OpenDirectory(int parent_fd, const std::string& name);
// The entries of an open directory, "." and ".." left out: the first `max_entries` the directory
// hands out (in its own order), then sorted by name.
Result<DirListing> ListDirectory(int dir_fd,
                                 size_t max_entries = std::numeric_limits<size_t>::max());
// The newest modification time of directory `name` in `parent_fd` and of what is under it, as far
// as `max_entries` entries and `max_depth` levels below it: deeper or further entries are not
// looked at (the bound keeps a folder of millions of files from stalling the caller).
Result<std::chrono::system_clock::time_point> NewestChange(int parent_fd, const std::string& name,
                                                           size_t max_entries, int max_depth);
// Removes directory `name` in `parent_fd` and everything under it, removing at most `*budget`
// entries (decremented); links are removed, never followed. Directories nested deeper than a few
// levels are first moved up into `name` (renamed there), so that the removal holds a bounded
// number of directories open however deep the tree. True once `name` is gone; false when the
// budget ran out first (call again to go on).
Result<bool> RemoveTree(int parent_fd, const std::string& name, size_t* budget);

}  // namespace vgpu::monitor
