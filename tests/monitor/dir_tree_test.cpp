#include "monitor/dir_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace vgpu::monitor {
namespace {

namespace fs = std::filesystem;

class DirTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-dir-tree-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/containers/c/sub");
    fs::create_directories(dir_ + "/outside");
    std::ofstream(dir_ + "/outside/keep.txt") << "keep";
    std::ofstream(dir_ + "/containers/c/r.cache") << "x";
    std::ofstream(dir_ + "/containers/c/sub/deep") << "x";
    fs::create_directory_symlink(dir_ + "/outside", dir_ + "/containers/c/escape");
    fs::create_symlink(dir_ + "/outside/keep.txt", dir_ + "/containers/c/file-link");
    fs::create_directory_symlink(dir_ + "/outside", dir_ + "/containers/linked");
    fd_ = UniqueFd(open((dir_ + "/containers").c_str(), O_RDONLY | O_DIRECTORY));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Sets the modification time of `rel` (not following a link) to `t` seconds since the epoch.
  void SetMTime(const std::string& rel, time_t t) const {
    const timespec times[2] = {{t, 0}, {t, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, (dir_ + "/" + rel).c_str(), times, AT_SYMLINK_NOFOLLOW), 0);
  }

  std::string dir_;
  UniqueFd fd_;
};

TEST_F(DirTreeTest, ListsEntriesWithTheirOwnTypes) {
  auto c = OpenDirectory(fd_.get(), "c");
  ASSERT_TRUE(c.ok());
  auto entries = ListDirectory(c->get());
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].name, "escape");
  EXPECT_EQ((*entries)[0].type, S_IFLNK);
  EXPECT_EQ((*entries)[2].name, "r.cache");
  EXPECT_EQ((*entries)[2].type, S_IFREG);
  EXPECT_EQ((*entries)[3].type, S_IFDIR);
  EXPECT_FALSE(OpenDirectory(fd_.get(), "linked").ok());  // a link is never followed
}

TEST_F(DirTreeTest, NewestChangeCoversEverythingUnderTheDirectory) {
  for (const char* rel : {"containers/c", "containers/c/r.cache", "containers/c/sub",
                          "containers/c/escape", "containers/c/file-link"}) {
    SetMTime(rel, 1000);
  }
  SetMTime("containers/c/sub/deep", 5000);
  SetMTime("outside/keep.txt", 9000);  // behind a link: not ours
  auto newest = NewestChange(fd_.get(), "c");
  ASSERT_TRUE(newest.ok()) << newest.status().ToString();
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*newest), 5000);
}

TEST_F(DirTreeTest, RemoveTreeRemovesLinksNotTheirTargets) {
  ASSERT_TRUE(RemoveTree(fd_.get(), "c").ok());
  EXPECT_FALSE(fs::exists(dir_ + "/containers/c"));
  EXPECT_TRUE(fs::exists(dir_ + "/outside/keep.txt"));
  EXPECT_FALSE(RemoveTree(fd_.get(), "linked").ok());  // refuses a link to a directory
  EXPECT_TRUE(fs::exists(dir_ + "/outside/keep.txt"));
}

}  // namespace
}  // namespace vgpu::monitor
