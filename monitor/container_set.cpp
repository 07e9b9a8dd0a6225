#include "monitor/container_set.h"

#include <fcntl.h>

#include <set>

#include "monitor/dir_tree.h"

namespace vgpu::monitor {
namespace {

constexpr std::string_view kRegionSuffix = ".cache";

}  // namespace

void ContainerSet::Refresh() {
  auto fd = OpenDirectory(AT_FDCWD, dir_);
  if (!fd.ok()) {
    // No containers directory yet (no pod was ever given a vGPU here) is normal at first.
    log_->Report("containers-dir", "containers directory " + dir_ + ": " + fd.status().message());
    fd_.Reset();
    containers_.clear();
    return;
  }
  log_->Resolve("containers-dir");
  fd_ = std::move(*fd);
  auto entries = ListDirectory(fd_.get());
  if (!entries.ok()) {
    log_->Report("containers-dir",
                 "containers directory " + dir_ + ": " + entries.status().message());
    return;
  }
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
  auto dir = OpenDirectory(fd_.get(), dir_name);
  auto entries = dir.ok() ? ListDirectory(dir->get()) : Result<std::vector<DirEntry>>(dir.status());
  if (!entries.ok()) {
    log_->Report("dir:" + dir_name,
                 "skipping " + dir_ + "/" + dir_name + ": " + entries.status().message());
    c.regions.clear();
    return;
  }
  log_->Resolve("dir:" + dir_name);
  std::set<std::string> present;
  for (const DirEntry& e : *entries) {
    if (!e.name.ends_with(kRegionSuffix)) continue;
    present.insert(e.name);
    const std::string key = "file:" + dir_name + "/" + e.name;
    const std::string where = dir_ + "/" + dir_name + "/" + e.name;
    auto it = c.regions.find(e.name);
    if (it != c.regions.end()) {
      if (Status s = it->second->Check(dir->get(), e.name); !s.ok()) {
        log_->Report(key, "region " + where + " dropped: " + s.message());
        c.regions.erase(it);
      }
      continue;
    }
    auto region = RegionFile::Open(dir->get(), e.name);
    if (!region.ok()) {
      log_->Report(key, "skipping " + where + ": " + region.status().message());
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
