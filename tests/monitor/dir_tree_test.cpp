#include "monitor/dir_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

namespace vgpu::monitor {
namespace {

namespace fs = std::filesystem;

// Creates an empty file.
void Touch(const std::string& path) {
  const std::ofstream file(path);
}

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
  auto listing = ListDirectory(c->get());
  ASSERT_TRUE(listing.ok());
  const std::vector<DirEntry>& entries = listing->entries;
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_FALSE(listing->truncated);
  EXPECT_EQ(entries[0].name, "escape");
  EXPECT_EQ(entries[0].type, S_IFLNK);
  EXPECT_EQ(entries[2].name, "r.cache");
  EXPECT_EQ(entries[2].type, S_IFREG);
  EXPECT_EQ(entries[3].type, S_IFDIR);
  EXPECT_FALSE(OpenDirectory(fd_.get(), "linked").ok());  // a link is never followed
}

TEST_F(DirTreeTest, NewestChangeCoversEverythingUnderTheDirectory) {
  for (const char* rel : {"containers/c", "containers/c/r.cache", "containers/c/sub",
                          "containers/c/escape", "containers/c/file-link"}) {
    SetMTime(rel, 1000);
  }
  SetMTime("containers/c/sub/deep", 5000);
  SetMTime("outside/keep.txt", 9000);  // behind a link: not ours
  auto newest = NewestChange(fd_.get(), "c", 1000, 8);
  ASSERT_TRUE(newest.ok()) << newest.status().ToString();
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*newest), 5000);
}

TEST_F(DirTreeTest, RemoveTreeRemovesLinksNotTheirTargets) {
  size_t budget = 1000;
  auto done = RemoveTree(fd_.get(), "c", &budget);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(*done);
  EXPECT_EQ(budget, 1000u - 6);  // r.cache, sub/deep, sub, escape, file-link, c
  EXPECT_FALSE(fs::exists(dir_ + "/containers/c"));
  EXPECT_TRUE(fs::exists(dir_ + "/outside/keep.txt"));
  EXPECT_FALSE(RemoveTree(fd_.get(), "linked", &budget).ok());  // refuses a link to a directory
  EXPECT_TRUE(fs::exists(dir_ + "/outside/keep.txt"));
}

// A container's folder is the container's: it may hold any number of entries. A listing reads
// only as many as asked.
TEST_F(DirTreeTest, AListingReadsNoMoreThanItIsAskedFor) {
  fs::create_directories(dir_ + "/containers/flood");
  for (int i = 0; i < 1000; ++i) {
    Touch(dir_ + "/containers/flood/f" + std::to_string(i));
  }
  auto dir = OpenDirectory(fd_.get(), "flood");
  ASSERT_TRUE(dir.ok());
  auto some = ListDirectory(dir->get(), 256);
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(some->entries.size(), 256u);
  EXPECT_TRUE(some->truncated);
  EXPECT_TRUE(std::is_sorted(some->entries.begin(), some->entries.end(),
                             [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; }));
  auto all = ListDirectory(dir->get(), 1000);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->entries.size(), 1000u);
  EXPECT_FALSE(all->truncated);
}

// Nested 40 levels deep (a tenant's mkdir loop): the newest change is looked for down to the depth
// asked, without failing; the removal removes all of it, holding a few directories open at a time.
// Before, both refused trees deeper than 8 levels: the folder of a gone pod stayed on the node.
TEST_F(DirTreeTest, DeepTreesAreRemovedAndTheirChangesLookedForWithinBounds) {
  std::string path = dir_ + "/containers/deep";
  for (int level = 0; level < 40; ++level) {
    path += "/d";
    fs::create_directories(path);
    Touch(path + "/f");
  }
  // Oldest everywhere, but the bottom file newest: deeper than looked at.
  std::string walk = "containers/deep";
  SetMTime(walk, 1000);
  for (int level = 0; level < 40; ++level) {
    walk += "/d";
    SetMTime(walk + "/f", level == 39 ? 9000 : 1000);
    SetMTime(walk, 1000);
  }
  auto newest = NewestChange(fd_.get(), "deep", 10'000, 8);
  ASSERT_TRUE(newest.ok()) << newest.status().ToString();
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*newest), 1000) << "level 40 is not looked at";
  auto shallow = NewestChange(fd_.get(), "deep", 10'000, 50);
  ASSERT_TRUE(shallow.ok());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*shallow), 9000);

  size_t budget = 1000;
  auto done = RemoveTree(fd_.get(), "deep", &budget);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_TRUE(*done);
  EXPECT_FALSE(fs::exists(dir_ + "/containers/deep"));
  EXPECT_TRUE(fs::exists(dir_ + "/outside/keep.txt"));
}

// A removal spends at most its budget and goes on where it stopped at the next call.
TEST_F(DirTreeTest, RemovalGoesOnWithinItsBudget) {
  fs::create_directories(dir_ + "/containers/big/sub");
  for (int i = 0; i < 500; ++i) {
    Touch(dir_ + "/containers/big/f" + std::to_string(i));
    Touch(dir_ + "/containers/big/sub/g" + std::to_string(i));
  }
  int calls = 0;
  bool gone = false;
  while (!gone && calls < 10) {
    size_t budget = 300;
    auto done = RemoveTree(fd_.get(), "big", &budget);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    gone = *done;
    ++calls;
    if (!gone) {
      EXPECT_EQ(budget, 0u);
    }
  }
  EXPECT_TRUE(gone);
  EXPECT_EQ(calls, 4);  // 1002 entries, 300 a call
  EXPECT_FALSE(fs::exists(dir_ + "/containers/big"));
}

}  // namespace
}  // namespace vgpu::monitor
