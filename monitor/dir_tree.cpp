#include "monitor/dir_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace vgpu::monitor {
namespace {

// Deeper trees are not something the device plugin makes: refuse rather than recurse without end.
constexpr int kMaxDepth = 8;

std::string Errno(const std::string& what) {
  return what + ": " + std::system_category().message(errno);
}

std::chrono::system_clock::time_point MTime(const struct stat& st) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

Status NewestUnder(int dir_fd, int depth, std::chrono::system_clock::time_point* newest) {
  if (depth > kMaxDepth)
    return FailedPrecondition("nested deeper than " + std::to_string(kMaxDepth));
  auto entries = ListDirectory(dir_fd);
  if (!entries.ok()) return entries.status();
  for (const DirEntry& e : *entries) {
    struct stat st {};
    if (::fstatat(dir_fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    *newest = std::max(*newest, MTime(st));
    if (!S_ISDIR(st.st_mode)) continue;
    auto sub = OpenDirectory(dir_fd, e.name);
    if (!sub.ok()) return sub.status();
    VGPU_RETURN_IF_ERROR(NewestUnder(sub->get(), depth + 1, newest));
  }
  return Status::Ok();
}

Status RemoveUnder(int dir_fd, int depth) {
  if (depth > kMaxDepth)
    return FailedPrecondition("nested deeper than " + std::to_string(kMaxDepth));
  auto entries = ListDirectory(dir_fd);
  if (!entries.ok()) return entries.status();
  for (const DirEntry& e : *entries) {
    if (e.type == S_IFDIR) {
      auto sub = OpenDirectory(dir_fd, e.name);
      if (!sub.ok()) return sub.status().WithContext(e.name);
      VGPU_RETURN_IF_ERROR(RemoveUnder(sub->get(), depth + 1).WithContext(e.name));
      if (::unlinkat(dir_fd, e.name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
        return Unavailable(Errno("cannot remove " + e.name));
      }
    } else if (::unlinkat(dir_fd, e.name.c_str(), 0) != 0 && errno != ENOENT) {
      return Unavailable(Errno("cannot remove " + e.name));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<UniqueFd> OpenDirectory(int parent_fd, const std::string& name) {
  UniqueFd fd(::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Unavailable(Errno("cannot open " + name));
  return fd;
}

Result<std::vector<DirEntry>> ListDirectory(int dir_fd) {
  // fdopendir takes the descriptor it is given: hand it a duplicate, the caller keeps its own.
  const int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return Unavailable(Errno("cannot list"));
  DIR* dir = ::fdopendir(dup);
  if (dir == nullptr) {
    (void)::close(dup);
    return Unavailable(Errno("cannot list"));
  }
  ::rewinddir(dir);  // the duplicate shares the position of the caller's descriptor
  std::vector<DirEntry> out;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    out.push_back(DirEntry{name, static_cast<mode_t>(st.st_mode & S_IFMT)});
  }
  (void)::closedir(dir);
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

Result<std::chrono::system_clock::time_point> NewestChange(int parent_fd, const std::string& name) {
  auto dir = OpenDirectory(parent_fd, name);
  if (!dir.ok()) return dir.status();
  struct stat st {};
  if (::fstat(dir->get(), &st) != 0) return Unavailable(Errno("cannot stat " + name));
  std::chrono::system_clock::time_point newest = MTime(st);
  VGPU_RETURN_IF_ERROR(NewestUnder(dir->get(), 0, &newest).WithContext(name));
  return newest;
}

Status RemoveTree(int parent_fd, const std::string& name) {
  auto dir = OpenDirectory(parent_fd, name);
  if (!dir.ok()) return dir.status();
  VGPU_RETURN_IF_ERROR(RemoveUnder(dir->get(), 0).WithContext(name));
  if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0) {
    return Unavailable(Errno("cannot remove " + name));
  }
  return Status::Ok();
}

}  // namespace vgpu::monitor
