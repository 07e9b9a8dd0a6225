#pragma once

// The base of the libvgpu tests that run whole processes as one container's: a fresh temporary
// folder holding the fake driver's state and the container's region, and the environment a pod
// gets (libvgpu preloaded, the fake driver, no context or module memory so counts are exact).

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <string>

#include "process_runner.h"

namespace vgpu::testing {

class ContainerTest : public ::testing::Test {
 protected:
  using Env = std::map<std::string, std::string>;

  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-libvgpu-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/fake");
    region_ = dir_ + "/region.cache";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `limit` empty: no CUDA_DEVICE_MEMORY_LIMIT.
  Env BaseEnv(const std::string& limit) const {
    Env env{{"LD_PRELOAD", VGPU_LIBVGPU_SO},
            {"LD_LIBRARY_PATH", VGPU_FAKE_DIR},
            {"VGPU_FAKE_STATE_DIR", dir_ + "/fake"},
            {"VGPU_FAKE_GPU_MEMORY", "16g"},
            {"VGPU_FAKE_CONTEXT_MEMORY", "0"},
            {"VGPU_FAKE_MODULE_MEMORY", "0"},
            {"CUDA_DEVICE_MEMORY_SHARED_CACHE", region_}};
    if (!limit.empty()) env["CUDA_DEVICE_MEMORY_LIMIT"] = limit;
    return env;
  }
  static std::string Describe(const RunResult& r) {
    return "status " + std::to_string(r.status) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
  }

  std::string dir_;
  std::string region_;
};

}  // namespace vgpu::testing
