#pragma once

// Directory walking for the containers directory, relative to open directory descriptors and
// never following a symbolic link: the containers' directories are writable from inside the
// containers, so any entry may be a link planted to point elsewhere on the host.

#include <sys/stat.h>

#include <chrono>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "monitor/unique_fd.h"

namespace vgpu::monitor {

struct DirEntry {
  std::string name;
  mode_t type = 0;  // S_IFDIR, S_IFREG, S_IFLNK, ... (of the entry itself, not a link's target)
};

// Opens directory `name` in `parent_fd` (AT_FDCWD: a path); refuses a symbolic link.
Result<UniqueFd> OpenDirectory(int parent_fd, const std::string& name);
// The entries of an open directory, "." and ".." left out.
Result<std::vector<DirEntry>> ListDirectory(int dir_fd);
// The newest modification time of directory `name` in `parent_fd` and of everything under it.
Result<std::chrono::system_clock::time_point> NewestChange(int parent_fd, const std::string& name);
// Removes directory `name` in `parent_fd` and everything under it; links are removed, never
// followed.
Status RemoveTree(int parent_fd, const std::string& name);

}  // namespace vgpu::monitor
