#pragma once

// The containers the monitor watches: every directory `<pod-uid>_<container>` under
// <vgpu_dir>/containers and the region files in it (`*.cache`, the file libvgpu maps through
// CUDA_DEVICE_MEMORY_SHARED_CACHE), kept mapped from tick to tick. A name that does not parse or a
// file that is not a usable region is reported once (ProblemLog) and skipped, never fatal.

#include <map>
#include <memory>
#include <string>

#include "core/monitor/container_dir.h"
#include "monitor/problem_log.h"
#include "monitor/region_file.h"
#include "monitor/unique_fd.h"

namespace vgpu::monitor {

struct WatchedContainer {
  ContainerDirName name;
  std::map<std::string, std::unique_ptr<RegionFile>> regions;  // by file name
};

class ContainerSet {
 public:
  ContainerSet(std::string containers_dir, ProblemLog* log)
      : dir_(std::move(containers_dir)), log_(log) {}

  // Brings the set up to date: new directories and regions are opened; regions gone, replaced,
  // resized or no longer valid are dropped; directories gone are forgotten.
  void Refresh();
  // By directory name.
  std::map<std::string, WatchedContainer>& containers() { return containers_; }
  // The containers directory, open since the last Refresh (-1 when it could not be opened).
  int containers_fd() const { return fd_.get(); }
  // Unmaps a container's regions and forgets it (before its directory is removed).
  void Forget(const std::string& dir_name);

 private:
  void RefreshContainer(const std::string& dir_name, WatchedContainer& c);

  std::string dir_;
  ProblemLog* log_;
  UniqueFd fd_;
  std::map<std::string, WatchedContainer> containers_;
};

}  // namespace vgpu::monitor
