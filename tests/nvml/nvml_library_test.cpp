// The NVML loader (dlopen, entry points, init) against the project's fake libnvidia-ml.so.1.

#include "nvml/nvml_library.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace vgpu::nvml {
namespace {
namespace fs = std::filesystem;

const std::string kLib = std::string(VGPU_FAKE_DRIVER_DIR) + "/libnvidia-ml.so.1";

class NvmlLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = fs::temp_directory_path() / ("vgpu-nvml-lib-" + std::to_string(::getpid()));
    fs::create_directories(state_);
    ::setenv("VGPU_FAKE_STATE_DIR", state_.c_str(), 1);
    ::setenv("VGPU_FAKE_GPUS", "2", 1);
    ::setenv("VGPU_FAKE_GPU_UUIDS",
             "GPU-11111111-2222-3333-4444-555555555555,GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
             1);
  }
  void TearDown() override { fs::remove_all(state_); }
  fs::path state_;
};

TEST_F(NvmlLibraryTest, ListsGpusByIndexAndUuid) {
  auto nvml = Library::Open(kLib, "");
  ASSERT_TRUE(nvml.ok()) << nvml.status().ToString();
  auto gpus = ListGpus(**nvml);
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  EXPECT_EQ(*gpus, (std::vector<GpuId>{{0, "GPU-11111111-2222-3333-4444-555555555555"},
                                       {1, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}}));
  // The fake has the optional entry points the monitor and the device plugin use.
  EXPECT_NE((*nvml)->api().handle_by_uuid, nullptr);
  EXPECT_NE((*nvml)->api().get_processes, nullptr);
  EXPECT_EQ((*nvml)->Error("nvmlDeviceGetCount", 999).rfind("NVML nvmlDeviceGetCount failed: ", 0),
            0u);
}

TEST(NvmlLibrary, MissingLibraryNamesItAndTheHint) {
  auto nvml = Library::Open("/nonexistent/libnvidia-ml.so.1", "use --fake-gpus");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(nvml.status().message().find("cannot load /nonexistent/libnvidia-ml.so.1"),
            std::string::npos);
  EXPECT_NE(nvml.status().message().find("; use --fake-gpus"), std::string::npos);
}

TEST(NvmlLibrary, LibraryWithoutNvmlIsTooOld) {
  auto nvml = Library::Open("libc.so.6", "");
  ASSERT_FALSE(nvml.ok());
  EXPECT_NE(nvml.status().message().find("lacks a required NVML function"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::nvml
