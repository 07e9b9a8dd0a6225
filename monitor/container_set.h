#pragma once

// The containers the monitor watches: every directory `<pod-uid>_<container>` under
// <vgpu_dir>/containers and the region files in it (`*.cache`, the file libvgpu maps through
// CUDA_DEVICE_MEMORY_SHARED_CACHE), kept mapped from tick to tick. A name that does not parse or a
// file that is not a usable region is reported once (ProblemLog, at most a few lines a minute per
// container) and skipped, never fatal; what was found is the container's state
// (core/monitor/container_folder.h). A container's folder is the container's to write: at most
// kMaxFolderEntries of its entries are read and kMaxRegionFiles of its *.cache files tried, so that
// one container cannot take the memory, descriptors or time the others need.
// Directories stay open; one is listed again only when its modification time says it changed
// (core/monitor/tick_plan.h: ShouldRelistDirectory) or when one of its files was not usable.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/codec/container_dir.h"
#include "core/monitor/container_folder.h"
#include "core/monitor/tick_plan.h"
#include "monitor/problem_log.h"
#include "monitor/region_file.h"
#include "monitor/unique_fd.h"

namespace vgpu::monitor {

using codec::ContainerDirName;
using codec::ParseContainerDirName;

struct WatchedContainer {
  ContainerDirName name;
  std::map<std::string, std::unique_ptr<RegionFile>> regions;  // by file name
  UniqueFd fd;                     // the directory, open since it was last listed
  std::optional<DirStamp> listed;  // its stamp when last listed; none: list it
  int64_t listed_at_ns = 0;
  bool all_usable = false;  // every *.cache file of the last listing is mapped
  FolderFindings findings;  // what the last look at the folder found
  std::string problem;      // the worst of it in words, printable ("" when nothing is wrong)
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
  // Records a region file's problem: logged (rate-limited per container), counted in the
  // container's findings, kept as its problem if it is the first.
  void NoteFileProblem(const std::string& dir_name, WatchedContainer& c, const std::string& file,
                       const std::string& what, const Status& s);
  // Forgets what is logged about a container's folder.
  void ForgetProblems(const std::string& dir_name);

  std::string dir_;
  ProblemLog* log_;
  UniqueFd fd_;
  std::optional<DirStamp> listed_;  // the containers directory's stamp when last listed
  int64_t listed_at_ns_ = 0;
  std::map<std::string, WatchedContainer> containers_;
};

}  // namespace vgpu::monitor
