#include "core/codec/container_dir.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

TEST(ContainerDirName, SplitsAtTheFirstUnderscore) {
  struct Case {
    const char* name;
    const char* uid;  // nullptr: rejected
    const char* container;
    const char* why;  // part of the message when rejected
  };
  const Case cases[] = {
      {"3f2a-11ee_main", "3f2a-11ee", "main", ""},
      {"uid_side_car", "uid", "side_car", ""},  // container names may hold '_'
      {"uid__x", "uid", "_x", ""},
      {"nounderscore", nullptr, nullptr, "no '_'"},
      {"_main", nullptr, nullptr, "empty pod UID"},
      {"uid_", nullptr, nullptr, "empty container name"},
      {"", nullptr, nullptr, "no '_'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = ParseContainerDirName(c.name);
    if (c.uid == nullptr) {
      ASSERT_FALSE(r.ok());
      EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().message();
    } else {
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(*r, (ContainerDirName{c.uid, c.container}));
      EXPECT_EQ(FormatContainerDirName(*r), c.name);  // the writer's form reads back
    }
  }
}

TEST(ContainerDirPath, WrittenAndReadBack) {
  const ContainerDirName name{"3f2a-11ee", "side_car"};
  EXPECT_EQ(ContainerDirPath("/usr/local/vgpu", name),
            "/usr/local/vgpu/containers/3f2a-11ee_side_car");
  auto back = ContainerDirFromPath(ContainerDirPath("/usr/local/vgpu", name));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, name);
  struct Bad {
    const char* path;
    const char* why;
  };
  for (const Bad& b : {Bad{"/usr/local/vgpu/libvgpu.so", "not under a /containers/ folder"},
                       Bad{"/usr/local/vgpu/containers/uid_main/x", "inside a container"},
                       Bad{"/usr/local/vgpu/containers/nounderscore", "no '_'"}}) {
    SCOPED_TRACE(b.path);
    auto r = ContainerDirFromPath(b.path);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(b.why), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace vgpu::codec
