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
  auto listing = ListDirectory(fd_.get());
  if (!listing.ok()) {
    log_->Report("containers-dir",
                 "containers directory " + dir_ + ": " + listing.status().message());
    listed_.reset();
    return;
  }
  listed_ = stamp;
  listed_at_ns_ = now_ns;
  std::set<std::string> present;
  for (const DirEntry& e : listing->entries) {
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
      ForgetProblems(it->first);
      it = containers_.erase(it);
    }
  }
}

void ContainerSet::NoteFileProblem(const std::string& dir_name, WatchedContainer& c,
                                   const std::string& file, const std::string& what,
                                   const Status& s) {
  const std::string where = dir_ + "/" + dir_name + "/" + SafeText(file);
  log_->Report("file:" + dir_name + "/" + file, what + " " + where + ": " + s.message(),
               dir_ + "/" + dir_name);
  // Being created (or not readable now): it may become a region. Anything else is refused.
  const bool pending = s.code() == StatusCode::kUnavailable;
  ++(pending ? c.findings.pending : c.findings.refused);
  // The problem shown is the one of the state (container_folder.h): over the limits first, then
  // the first file refused, then the first being created.
  const bool worse = c.problem.empty() || (!pending && c.findings.refused == 1);
  if (worse && OverLimitsMessage(c.findings).empty()) {
    c.problem = SafeText(file) + ": " + s.message();
  }
}

void ContainerSet::RefreshContainer(const std::string& dir_name, WatchedContainer& c) {
  const std::string source = dir_ + "/" + dir_name;
  const std::optional<DirStamp> stamp = StampOf(fd_.get(), dir_name);
  const int64_t now_ns = RealtimeNs();
  if (!c.fd.valid() || !SameDirectory(c.listed, stamp)) {
    c.listed.reset();
    auto dir = OpenDirectory(fd_.get(), dir_name);
    if (!dir.ok()) {
      log_->Report("dir:" + dir_name, "skipping " + source + ": " + dir.status().message(), source);
      c.fd.Reset();
      c.regions.clear();
      c.findings = FolderFindings{.unreadable = true};
      c.problem = "folder: " + dir.status().message();
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
        --c.findings.usable;
        NoteFileProblem(dir_name, c, it->first, "region dropped:", s);
        it = c.regions.erase(it);
        c.all_usable = false;
      } else {
        ++it;
      }
    }
    return;
  }
  auto listing = ListDirectory(c.fd.get(), kMaxFolderEntries);
  if (!listing.ok()) {
    log_->Report("dir:" + dir_name, "skipping " + source + ": " + listing.status().message(),
                 source);
    c.regions.clear();
    c.listed.reset();
    c.findings = FolderFindings{.unreadable = true};
    c.problem = "folder: " + listing.status().message();
    return;
  }
  log_->Resolve("dir:" + dir_name);
  c.listed = stamp;
  c.listed_at_ns = now_ns;
  c.all_usable = true;
  c.findings = FolderFindings{.entries_truncated = listing->truncated};
  c.problem.clear();
  std::set<std::string> present;
  for (const DirEntry& e : listing->entries) {
    if (!e.name.ends_with(kRegionSuffix)) continue;
    if (present.size() == kMaxRegionFiles) {
      ++c.findings.region_files_ignored;
      continue;
    }
    present.insert(e.name);
    const std::string key = "file:" + dir_name + "/" + e.name;
    auto it = c.regions.find(e.name);
    if (it != c.regions.end()) {
      if (Status s = it->second->Check(c.fd.get(), e.name); !s.ok()) {
        NoteFileProblem(dir_name, c, e.name, "region dropped:", s);
        c.regions.erase(it);
        c.all_usable = false;
      } else {
        ++c.findings.usable;
      }
      continue;
    }
    auto region = RegionFile::Open(c.fd.get(), e.name);
    if (!region.ok()) {
      c.all_usable = false;  // retried every tick: a region being created becomes valid
      if (region.status().code() == StatusCode::kNotFound) continue;  // gone since the listing
      NoteFileProblem(dir_name, c, e.name, "skipping", region.status());
      continue;
    }
    log_->Resolve(key);
    c.regions.emplace(e.name, std::move(*region));
    ++c.findings.usable;
  }
  for (auto it = c.regions.begin(); it != c.regions.end();) {
    it = present.contains(it->first) ? std::next(it) : c.regions.erase(it);
  }
  if (const std::string over = OverLimitsMessage(c.findings); !over.empty()) {
    // One stable line per container (no counts in it: they change as the flood goes on).
    log_->Report("limits:" + dir_name, "container folder " + source + " " + over, source);
    c.problem = "folder " + over;
  } else {
    log_->Resolve("limits:" + dir_name);
  }
}

void ContainerSet::ForgetProblems(const std::string& dir_name) {
  log_->ResolvePrefix("file:" + dir_name + "/");
  log_->Resolve("dir:" + dir_name);
  log_->Resolve("limits:" + dir_name);
  log_->ForgetSource(dir_ + "/" + dir_name);
}

void ContainerSet::Forget(const std::string& dir_name) {
  ForgetProblems(dir_name);
  containers_.erase(dir_name);
}

}  // namespace vgpu::monitor
