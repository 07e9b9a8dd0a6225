#include "core/allocate/mps.h"

#include <gtest/gtest.h>

namespace vgpu::allocate {
namespace {

TEST(MpsDirsFor, Table) {
  struct Case {
    const char* root;
    const char* uuid;
    MpsDirs want;  // empty gpu: refused
  };
  const Case cases[] = {
      {"/tmp/vgpu-mps",
       "GPU-a",
       {"/tmp/vgpu-mps/GPU-a", "/tmp/vgpu-mps/GPU-a/pipe", "/tmp/vgpu-mps/GPU-a/log",
        "/tmp/vgpu-mps/shm"}},
      {"/run/mps//",
       "GPU-b",
       {"/run/mps/GPU-b", "/run/mps/GPU-b/pipe", "/run/mps/GPU-b/log", "/run/mps/shm"}},
      {"/", "GPU-c", {"/GPU-c", "/GPU-c/pipe", "/GPU-c/log", "/shm"}},
      {"relative/dir", "GPU-a", {}},
      {"", "GPU-a", {}},
      {"/tmp/vgpu-mps", "", {}},
      {"/tmp/vgpu-mps", "..", {}},
      {"/tmp/vgpu-mps", ".", {}},
      {"/tmp/vgpu-mps", "GPU-a/../../etc", {}},
  };
  for (const Case& c : cases) {
    Result<MpsDirs> got = MpsDirsFor(c.root, c.uuid);
    if (c.want.gpu.empty()) {
      EXPECT_FALSE(got.ok()) << c.root << " " << c.uuid;
      continue;
    }
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.root << " " << c.uuid;
  }
}

TEST(ActiveThreadPercentage, Table) {
  const std::pair<int64_t, int> cases[] = {{0, 100}, {-5, 100},  {1, 1},     {30, 30},
                                           {99, 99}, {100, 100}, {150, 100}, {200, 100}};
  for (auto [cores, want] : cases) EXPECT_EQ(ActiveThreadPercentage(cores), want) << cores;
}

TEST(PinnedDeviceMemLimit, OneEntryPerVisibleOrdinal) {
  EXPECT_EQ(PinnedDeviceMemLimit({{"GPU-a", 3000, 30}}), "0=3000M");
  EXPECT_EQ(PinnedDeviceMemLimit({{"GPU-a", 3000, 30}, {"GPU-b", 512, 0}}), "0=3000M,1=512M");
  EXPECT_EQ(PinnedDeviceMemLimit({}), "");
}

// The pod's nvidia.com/vgpu-mode against the node's mode, and the one-GPU rule of MPS nodes.
TEST(CheckModeGrant, Table) {
  struct Case {
    const char* annotation;  // nullptr: not set
    const char* node_mode;
    size_t gpus;
    const char* want_error;  // nullptr: accepted
  };
  const Case cases[] = {
      {nullptr, "mps", 1, nullptr},
      {nullptr, "hami-core", 2, nullptr},
      {"mps", "mps", 1, nullptr},
      {"hami-core, mps", "mps", 1, nullptr},
      {"", "mps", 1, nullptr},
      {"hami-core", "mps", 1, "pod asks nvidia.com/vgpu-mode=hami-core but this node runs"},
      {"mps", "hami-core", 1, "this node runs its GPUs in mode hami-core"},
      {"mpsx", "mps", 1, "nvidia.com/vgpu-mode=mpsx"},
      {nullptr, "mps", 2, "container c was granted 2 GPUs on an MPS node"},
      {"mps", "mps", 3, "granted 3 GPUs"},
  };
  for (const Case& c : cases) {
    PodView pod;
    if (c.annotation != nullptr) pod.annotations["nvidia.com/vgpu-mode"] = c.annotation;
    std::vector<GrantedDevice> devices(c.gpus, GrantedDevice{"GPU-x", 1000, 10});
    Status s = CheckModeGrant(pod, c.node_mode, devices, "c");
    if (c.want_error == nullptr) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else {
      ASSERT_FALSE(s.ok()) << (c.annotation ? c.annotation : "-") << " " << c.node_mode;
      EXPECT_NE(s.message().find(c.want_error), std::string::npos) << s.message();
    }
  }
}

}  // namespace
}  // namespace vgpu::allocate
