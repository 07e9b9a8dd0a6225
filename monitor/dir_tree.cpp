#include "monitor/dir_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace vgpu::monitor {
namespace {

// Directories the removal holds open at once: deeper ones are moved up first.
constexpr int kRemoveDepth = 8;
// Names read at a time while removing (each batch is removed before the next is read).
constexpr size_t kRemoveBatch = 256;

std::string Errno(const std::string& what) {
  return what + ": " + std::system_category().message(errno);
}

std::chrono::system_clock::time_point MTime(const struct stat& st) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

mode_t TypeOf(int dir_fd, const dirent& e) {
  switch (e.d_type) {
    case DT_DIR:
      return S_IFDIR;
    case DT_REG:
      return S_IFREG;
    case DT_LNK:
      return S_IFLNK;
    case DT_FIFO:
      return S_IFIFO;
    case DT_SOCK:
      return S_IFSOCK;
    case DT_CHR:
      return S_IFCHR;
    case DT_BLK:
      return S_IFBLK;
    default: {
      // The file system does not say: ask, without following a link.
      struct stat st {};
      if (::fstatat(dir_fd, e.d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;  // gone
      return st.st_mode & S_IFMT;
    }
  }
}

struct Walk {
  size_t entries_left;
  int max_depth;
  std::chrono::system_clock::time_point newest;
};

Status NewestUnder(int dir_fd, int depth, Walk* walk) {
  auto listing = ListDirectory(dir_fd, walk->entries_left);
  if (!listing.ok()) return listing.status();
  walk->entries_left -= std::min(walk->entries_left, listing->entries.size());
  for (const DirEntry& e : listing->entries) {
    struct stat st {};
    if (::fstatat(dir_fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    walk->newest = std::max(walk->newest, MTime(st));
    if (!S_ISDIR(st.st_mode) || depth >= walk->max_depth || walk->entries_left == 0) continue;
    auto sub = OpenDirectory(dir_fd, e.name);
    if (!sub.ok()) continue;  // replaced by something else meanwhile
    VGPU_RETURN_IF_ERROR(NewestUnder(sub->get(), depth + 1, walk));
  }
  return Status::Ok();
}

// Moves directory `name` of `dir_fd` into `top_fd` under a name of its own there.
Status MoveUp(int dir_fd, const std::string& name, int top_fd, uint64_t* counter) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const std::string to = ".vgpu-removing-" + std::to_string((*counter)++);
    if (::renameat2(dir_fd, name.c_str(), top_fd, to.c_str(), RENAME_NOREPLACE) == 0) {
      return Status::Ok();
    }
    if (errno != EEXIST) return Unavailable(Errno("cannot move " + name + " up to remove it"));
  }
  return Unavailable("cannot move " + name + " up to remove it: every name tried is taken");
}

// Removes what is under `dir_fd` (at `depth` below `top_fd`), within `*budget` entries. Ok with
// the directory empty, or with the budget spent.
Status RemoveUnder(int dir_fd, int top_fd, int depth, size_t* budget, uint64_t* counter) {
  while (*budget > 0) {
    auto listing = ListDirectory(dir_fd, kRemoveBatch);
    if (!listing.ok()) return listing.status();
    if (listing->entries.empty()) return Status::Ok();
    for (const DirEntry& e : listing->entries) {
      if (*budget == 0) return Status::Ok();
      if (e.type == S_IFDIR) {
        if (depth + 1 >= kRemoveDepth) {
          // Too deep to open one more level: the directory goes up to the top, where the top's
          // own loop finds it, and is removed from there.
          VGPU_RETURN_IF_ERROR(MoveUp(dir_fd, e.name, top_fd, counter));
          continue;
        }
        auto sub = OpenDirectory(dir_fd, e.name);
        if (!sub.ok()) return sub.status().WithContext(e.name);
        VGPU_RETURN_IF_ERROR(
            RemoveUnder(sub->get(), top_fd, depth + 1, budget, counter).WithContext(e.name));
        if (*budget == 0) return Status::Ok();
        if (::unlinkat(dir_fd, e.name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT &&
            errno != ENOTEMPTY) {  // not empty: something came meanwhile; the next batch sees it
          return Unavailable(Errno("cannot remove " + e.name));
        }
      } else if (::unlinkat(dir_fd, e.name.c_str(), 0) != 0 && errno != ENOENT) {
        return Unavailable(Errno("cannot remove " + e.name));
      }
      --*budget;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<UniqueFd> OpenDirectory(int parent_fd, const std::string& name) {
  // O_DIRECTORY: a FIFO or device planted under this name is refused before it is opened.
  UniqueFd fd(::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) return Unavailable(Errno("cannot open " + name));
  return fd;
}

Result<DirListing> ListDirectory(int dir_fd, size_t max_entries) {
  // fdopendir takes the descriptor it is given: hand it a duplicate, the caller keeps its own.
  const int dup = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return Unavailable(Errno("cannot list"));
  DIR* dir = ::fdopendir(dup);
  if (dir == nullptr) {
    (void)::close(dup);
    return Unavailable(Errno("cannot list"));
  }
  ::rewinddir(dir);  // the duplicate shares the position of the caller's descriptor
  DirListing out;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    if (out.entries.size() >= max_entries) {
      out.truncated = true;
      break;
    }
    const mode_t type = TypeOf(::dirfd(dir), *e);
    if (type == 0) continue;  // gone
    out.entries.push_back(DirEntry{std::string(name), type});
  }
  (void)::closedir(dir);
  std::sort(out.entries.begin(), out.entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

Result<std::chrono::system_clock::time_point> NewestChange(int parent_fd, const std::string& name,
                                                           size_t max_entries, int max_depth) {
  auto dir = OpenDirectory(parent_fd, name);
  if (!dir.ok()) return dir.status();
  struct stat st {};
  if (::fstat(dir->get(), &st) != 0) return Unavailable(Errno("cannot stat " + name));
  Walk walk{max_entries, max_depth, MTime(st)};
  VGPU_RETURN_IF_ERROR(NewestUnder(dir->get(), 0, &walk).WithContext(name));
  return walk.newest;
}

Result<bool> RemoveTree(int parent_fd, const std::string& name, size_t* budget) {
  auto dir = OpenDirectory(parent_fd, name);
  if (!dir.ok()) return dir.status();
  uint64_t counter = 0;
  VGPU_RETURN_IF_ERROR(RemoveUnder(dir->get(), dir->get(), 0, budget, &counter).WithContext(name));
  if (*budget == 0) {
    // Spent exactly on the last entry, or not done: the next call tells (it finds it empty).
    return false;
  }
  if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0) {
    if (errno == ENOTEMPTY) return false;  // filled meanwhile
    return Unavailable(Errno("cannot remove " + name));
  }
  --*budget;
  return true;
}

}  // namespace vgpu::monitor
