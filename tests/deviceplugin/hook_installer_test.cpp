#include "deviceplugin/hook_installer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace vgpu::deviceplugin {
namespace {
namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

ino_t Inode(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_ino;
}

class HookInstallerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vgpu-hook-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(HookInstallerTest, InstallsLibraryAndPreloadByRenameNeverInPlace) {
  const std::string src = dir_ / "libvgpu.so";
  std::ofstream(src) << "v1";
  HookLayout layout{(dir_ / "hook").string(), "0.1.0"};
  ASSERT_TRUE(InstallHook(layout, src, (dir_ / "lock").string()).ok());
  EXPECT_EQ(Slurp(layout.LibraryFile()), "v1");
  EXPECT_EQ(Slurp(layout.PreloadFile()), layout.VgpuDir() + "/libvgpu.so\n");
  EXPECT_TRUE(fs::is_directory(layout.ContainersDir()));
  EXPECT_EQ(fs::status(dir_ / "lock").permissions() & fs::perms::all, fs::perms::all);
  // Sticky: no tenant can delete or replace another tenant's file in it (issue 42, item 5).
  EXPECT_EQ(fs::status(dir_ / "lock").permissions() & fs::perms::sticky_bit, fs::perms::sticky_bit);

  // A reinstall replaces the file by rename: a process that mapped the old inode keeps it.
  const ino_t before = Inode(layout.LibraryFile());
  std::ofstream(src) << "v2";
  ASSERT_TRUE(InstallHook(layout, src, "").ok());
  EXPECT_EQ(Slurp(layout.LibraryFile()), "v2");
  EXPECT_NE(Inode(layout.LibraryFile()), before);
  for (const auto& e : fs::directory_iterator(layout.VgpuDir())) {
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
  }
}

TEST_F(HookInstallerTest, MissingSourceIsAClearError) {
  HookLayout layout{(dir_ / "hook").string(), "0.1.0"};
  Status s = InstallHook(layout, (dir_ / "nope.so").string(), "");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("nope.so"), std::string::npos);
}

TEST_F(HookInstallerTest, ContainerDirectoryIsCreatedAndPathsAreChecked) {
  HookLayout layout{(dir_ / "hook").string(), "0.1.0"};
  ASSERT_TRUE(EnsureContainerDir(layout, "uid", "main").ok());
  EXPECT_TRUE(fs::is_directory(layout.ContainersDir() + "/uid_main"));
  EXPECT_FALSE(EnsureContainerDir(layout, "uid", "../x").ok());
  EXPECT_FALSE(EnsureContainerDir(layout, "", "main").ok());
}

}  // namespace
}  // namespace vgpu::deviceplugin
