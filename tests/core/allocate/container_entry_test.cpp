#include "core/allocate/container_entry.h"

#include <gtest/gtest.h>

namespace vgpu::allocate {
namespace {

TEST(ContainerForEntry, MapsEntryIndexToInitThenAppContainers) {
  PodView pod;
  pod.ns = "ns";
  pod.name = "p";
  pod.containers = {{"init", true, {}}, {"app1", false, {}}, {"app2", false, {}}};
  for (size_t i = 0; i < 3; ++i) {
    auto c = ContainerForEntry(pod, i);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->name, pod.containers[i].name);
  }
  auto bad = ContainerForEntry(pod, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ns/p"), std::string::npos);
  EXPECT_NE(bad.status().message().find("3 containers"), std::string::npos);
}

TEST(ValidateEntry, Table) {
  const NodeGpuMemory node = {{"GPU-a", 16384}, {"GPU-b", 8192}};
  struct Case {
    const char* name;
    std::vector<GrantedDevice> entry;
    size_t requested;
    const char* error_fragment;  // nullptr = ok
  };
  const std::vector<Case> cases = {
      {"one gpu", {{"GPU-a", 1000, 30}}, 1, nullptr},
      {"two gpus", {{"GPU-a", 1000, 30}, {"GPU-b", 1000, 30}}, 2, nullptr},
      {"count mismatch more asked", {{"GPU-a", 1000, 30}}, 2, "kubelet allocated 2"},
      {"count mismatch fewer asked", {{"GPU-a", 1, 0}, {"GPU-b", 1, 0}}, 1, "assigned 2"},
      {"unknown gpu", {{"GPU-zz", 1000, 30}}, 1, "GPU-zz"},
      {"duplicate gpu", {{"GPU-a", 1, 0}, {"GPU-a", 1, 0}}, 2, "appears twice"},
      // issue 42: 0 MiB reached libvgpu.so as CUDA_DEVICE_MEMORY_LIMIT_0=0m, read as unlimited.
      {"zero memory", {{"GPU-a", 0, 30}}, 1, "memory limit of 0 MiB; a limit must be 1 to 16384"},
      {"negative memory", {{"GPU-a", -5, 30}}, 1, "memory limit of -5 MiB"},
      {"whole card", {{"GPU-a", 16384, 100}}, 1, nullptr},
      {"more than the card", {{"GPU-b", 8193, 0}}, 1, "a limit must be 1 to 8192"},
      {"huge memory", {{"GPU-a", INT64_MAX, 0}}, 1, "a limit must be 1 to 16384"},
      {"cores above 100", {{"GPU-a", 1000, 101}}, 1, "a share is 0 to 100"},
      {"negative cores", {{"GPU-a", 1000, -1}}, 1, "a share is 0 to 100"},
  };
  for (const auto& c : cases) {
    Status s = ValidateEntry(c.entry, c.requested, node, "n1");
    if (c.error_fragment == nullptr) {
      EXPECT_TRUE(s.ok()) << c.name << ": " << s.ToString();
    } else {
      ASSERT_FALSE(s.ok()) << c.name;
      EXPECT_NE(s.message().find(c.error_fragment), std::string::npos)
          << c.name << ": " << s.message();
    }
  }
}

}  // namespace
}  // namespace vgpu::allocate
