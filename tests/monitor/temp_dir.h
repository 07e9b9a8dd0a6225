#pragma once

// A fresh directory under /tmp for one test, removed with everything in it; and a descriptor of
// it, as the monitor opens region files relative to their folder.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "monitor/unique_fd.h"

namespace vgpu::monitor {

class TempDir {
 public:
  // `prefix`: the name's start, e.g. "vgpu-region-file-test".
  explicit TempDir(const std::string& prefix) {
    std::string name = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(name.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << name;
      return;
    }
    path_ = name;
    fd_ = UniqueFd(open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  ~TempDir() {
    if (!path_.empty()) std::filesystem::remove_all(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }

 private:
  std::string path_;
  UniqueFd fd_;
};

}  // namespace vgpu::monitor
