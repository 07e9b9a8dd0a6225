// gtest main for the fake-driver tests: fixes the simulated GPU configuration before the fake
// driver is first initialized (cuInit / nvmlInit read the environment once).

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "test_env.h"

namespace vgpu::fake::test {

namespace {
std::string& StateDirStorage() {
  static std::string dir;
  return dir;
}
}  // namespace

const std::string& StateDir() {
  return StateDirStorage();
}

}  // namespace vgpu::fake::test

int main(int argc, char** argv) {
  char tmpl[] = "/tmp/vgpu-fake-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  vgpu::fake::test::StateDirStorage() = tmpl;
  setenv("VGPU_FAKE_STATE_DIR", tmpl, 1);
  setenv("VGPU_FAKE_GPUS", "2", 1);
  setenv("VGPU_FAKE_GPU_MEMORY", "1g,2g", 1);
  setenv("VGPU_FAKE_GPU_SMS", "132,66", 1);
  setenv("VGPU_FAKE_CONTEXT_MEMORY", "64m", 1);
  setenv("VGPU_FAKE_MODULE_MEMORY", "2m", 1);
  unsetenv("VGPU_FAKE_GPU_UUIDS");
  unsetenv("VGPU_FAKE_GPU_NAME");
  unsetenv("CUDA_VISIBLE_DEVICES");
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return rc;
}
