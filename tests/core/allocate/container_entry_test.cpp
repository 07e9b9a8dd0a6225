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
  const std::set<std::string> node = {"GPU-a", "GPU-b"};
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
