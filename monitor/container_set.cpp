#include "monitor/container_set.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <set>

#include "monitor/dir_tree.h"

namespace vgpu::monitor {
namespace {

constexpr std::string_view kRegionSuffix = ".cache";
// File systems stamp modification times with a coarse clock (a few ms); a listing taken within this
// of the directory's last change is not trusted to have seen it (tick_plan.h).
constexpr std::chrono::seconds kStampMargin{1};

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The stamp of `name` in `dir_fd` (AT_FDCWD: a path), without following a link.
std::optional<DirStamp> StampOf(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
    return std::nullopt;
  }
  return DirStamp{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

bool SameDirectory(const std::optional<DirStamp>& a, const std::optional<DirStamp>& b) {
  return a && b && a->dev == b->dev && a->ino == b->ino;
}

}  // namespace

void ContainerSet::Refresh() {
  const std::optional<DirStamp> stamp = StampOf(AT_FDCWD, dir_);
  const int64_t now_ns = RealtimeNs();
  if (!fd_.valid() || !SameDirectory(listed_, stamp)) {
    listed_.reset();
    auto fd = OpenDirectory(AT_FDCWD, dir_);
    if (!fd.ok()) {
      // No containers directory yet (no pod was ever given a vGPU here) is normal at first.
      log_->Report("containers-dir", "containers directory " + dir_ + ": " + fd.status().message());
      fd_.Reset();
      containers_.clear();
      return;
    }
    fd_ = std::move(*fd);
  }
  log_->Resolve("containers-dir");
  if (stamp && !ShouldRelistDirectory(listed_, listed_at_ns_, *stamp, kStampMargin)) {
    // Nothing added, removed or renamed here: the containers known are all there is.
    for (auto& [name, container] : containers_) RefreshContainer(name, container);
    return;
  }
  auto entries = ListDirectory(fd_.get());
  if (!entries.ok()) {
    log_->Report("containers-dir",
                 "containers directory " + dir_ + ": " + entries.status().message());
    listed_.reset();
    return;
  }
  listed_ = stamp;
  listed_at_ns_ = now_ns;
  std::set<std::string> present;
  for (const DirEntry& e : *entries) {
    if (e.type != S_IFDIR) continue;
    auto name = ParseContainerDirName(e.name);
    if (!name.ok()) {
      log_->Report("name:" + e.name,
                   "skipping " + dir_ + "/" + e.name + ": " + name.status().message());
      continue;
    }
    present.insert(e.name);
    auto [it, fresh] = containers_.try_emplace(e.name);
    if (fresh) it->second.name = *name;
    RefreshContainer(e.name, it->second);
  }
  for (auto it = containers_.begin(); it != containers_.end();) {
    if (present.contains(it->first)) {
      ++it;
    } else {
      log_->ResolvePrefix("file:" + it->first + "/");
      it = containers_.erase(it);
    }
  }
}

void ContainerSet::RefreshContainer(const std::string& dir_name, WatchedContainer& c) {
  const std::optional<DirStamp> stamp = StampOf(fd_.get(), dir_name);
  const int64_t now_ns = RealtimeNs();
  if (!c.fd.valid() || !SameDirectory(c.listed, stamp)) {
    c.listed.reset();
    auto dir = OpenDirectory(fd_.get(), dir_name);
    if (!dir.ok()) {
      log_->Report("dir:" + dir_name,
                   "skipping " + dir_ + "/" + dir_name + ": " + dir.status().message());
      c.fd.Reset();
      c.regions.clear();
      return;
    }
    c.fd = std::move(*dir);
  }
  if (stamp && c.all_usable &&
      !ShouldRelistDirectory(c.listed, c.listed_at_ns, *stamp, kStampMargin)) {
    // No file added, removed or renamed: each region is still the file at its name; check only
    // that it was not truncated or overwritten.
    for (auto it = c.regions.begin(); it != c.regions.end();) {
      if (Status s = it->second->CheckContent(); !s.ok()) {
        log_->Report(
            "file:" + dir_name + "/" + it->first,
            "region " + dir_ + "/" + dir_name + "/" + it->first + " dropped: " + s.message());
        it = c.regions.erase(it);
        c.all_usable = false;
      } else {
        ++it;
      }
    }
    return;
  }
  auto entries = ListDirectory(c.fd.get());
  if (!entries.ok()) {
    log_->Report("dir:" + dir_name,
                 "skipping " + dir_ + "/" + dir_name + ": " + entries.status().message());
    c.regions.clear();
    c.listed.reset();
    return;
  }
  log_->Resolve("dir:" + dir_name);
  c.listed = stamp;
  c.listed_at_ns = now_ns;
  c.all_usable = true;
  std::set<std::string> present;
  for (const DirEntry& e : *entries) {
    if (!e.name.ends_with(kRegionSuffix)) continue;
    present.insert(e.name);
    const std::string key = "file:" + dir_name + "/" + e.name;
    const std::string where = dir_ + "/" + dir_name + "/" + e.name;
    auto it = c.regions.find(e.name);
    if (it != c.regions.end()) {
      if (Status s = it->second->Check(c.fd.get(), e.name); !s.ok()) {
        log_->Report(key, "region " + where + " dropped: " + s.message());
        c.regions.erase(it);
        c.all_usable = false;
      }
      continue;
    }
    auto region = RegionFile::Open(c.fd.get(), e.name);
    if (!region.ok()) {
      log_->Report(key, "skipping " + where + ": " + region.status().message());
      c.all_usable = false;  // retried every tick: a region being created becomes valid
      continue;
    }
    log_->Resolve(key);
    c.regions.emplace(e.name, std::move(*region));
  }
  for (auto it = c.regions.begin(); it != c.regions.end();) {
    it = present.contains(it->first) ? std::next(it) : c.regions.erase(it);
  }
}

void ContainerSet::Forget(const std::string& dir_name) {
  log_->ResolvePrefix("file:" + dir_name + "/");
  log_->Resolve("dir:" + dir_name);
  containers_.erase(dir_name);
}

}  // namespace vgpu::monitor
