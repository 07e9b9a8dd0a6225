#include "monitor/proc_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace vgpu::monitor {
namespace {

namespace fs = std::filesystem;

class ProcTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-proc-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& rel, const std::string& text) const {
    fs::create_directories(fs::path(root_ + "/" + rel).parent_path());
    std::ofstream(root_ + "/" + rel) << text;
  }
  // A process directory: status with `nspid`, stat with `start`, maps with `maps` (nullptr: a
  // maps that cannot be read as a file).
  void Process(int pid, const std::string& nspid, uint64_t start, const char* maps) const {
    const std::string dir = std::to_string(pid);
    Write(dir + "/status", "Name:\tx\nPid:\t" + dir + "\nNSpid:\t" + nspid + "\n");
    Write(dir + "/stat", dir + " (some (odd) name) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 " +
                             std::to_string(start) + " 0 0\n");
    if (maps != nullptr) {
      Write(dir + "/maps", maps);
    } else {
      fs::create_directories(root_ + "/" + dir + "/maps");
    }
  }

  std::string root_;
};

constexpr const char* kMapsRegion =
    "7f00-7f10 rw-s 00000000 fd:01 42 /usr/local/vgpu/a.cache\n"
    "7f20-7f30 r-xp 00000000 fd:01 43 /usr/lib/libc.so.6\n";

TEST_F(ProcTableTest, ReadsOnlyTheProcessesThatFitASlot) {
  Process(100, "100", 5000, kMapsRegion);     // host namespace
  Process(200, "200\t7", 6000, kMapsRegion);  // a container's pid 7
  Process(300, "300\t8", 7000, kMapsRegion);  // pid 8: no slot has it
  Process(400, "400\t7", 8000, nullptr);      // maps unreadable
  Write("self/status", "NSpid:\t7\n");        // not a pid directory
  Write("500/status", "Name:\tbroken\n");     // no pid line
  auto source = NewProcfsSource(root_);
  const FileId region{0xfd, 1, 42};
  auto r = source->Scan(ProcScanRequest{{100, 7}, {region}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<HostProcess> procs = *r;
  std::sort(procs.begin(), procs.end(),
            [](const HostProcess& a, const HostProcess& b) { return a.host_pid < b.host_pid; });
  ASSERT_EQ(procs.size(), 3u);
  EXPECT_EQ(procs[0].host_pid, 100);
  EXPECT_EQ(procs[0].ns_pids, (std::vector<int32_t>{100}));
  EXPECT_EQ(procs[0].start_time, 5000u);
  EXPECT_TRUE(procs[0].maps_read);
  EXPECT_EQ(procs[0].mapped, (std::vector<FileId>{region}));  // the libc mapping is not asked for
  EXPECT_EQ(procs[1].host_pid, 200);
  EXPECT_EQ(procs[1].ns_pids, (std::vector<int32_t>{200, 7}));
  EXPECT_EQ(procs[1].start_time, 6000u);
  EXPECT_EQ(procs[2].host_pid, 400);
  EXPECT_FALSE(procs[2].maps_read);
}

TEST_F(ProcTableTest, UnreadableTableIsAnError) {
  EXPECT_FALSE(NewProcfsSource(root_ + "/missing")->Scan({{1}, {}}).ok());
  auto empty = NewProcfsSource(root_)->Scan({{1}, {}});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no process"), std::string::npos);
}

TEST_F(ProcTableTest, StatReadsOneProcessStateAndStartTime) {
  Process(200, "200\t7", 6000, kMapsRegion);
  Write("300/stat", "300 (z) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7000 0 0\n");
  Write("400/stat", "garbage");
  auto source = NewProcfsSource(root_);
  auto alive = source->Stat(200);
  ASSERT_TRUE(alive.ok() && alive->has_value()) << alive.status().ToString();
  EXPECT_EQ((*alive)->state, 'S');
  EXPECT_EQ((*alive)->start_time, 6000u);
  auto zombie = source->Stat(300);
  ASSERT_TRUE(zombie.ok() && zombie->has_value());
  EXPECT_EQ((*zombie)->state, 'Z');
  auto missing = source->Stat(999);
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value()) << "no such process";
  EXPECT_FALSE(source->Stat(400).ok()) << "unparsable: cannot tell";
  auto self = NewProcfsSource("/proc")->Stat(getpid());
  ASSERT_TRUE(self.ok() && self->has_value());
  EXPECT_GT((*self)->start_time, 0u);
}

TEST_F(ProcTableTest, TheRealProcFindsThisProcess) {
  auto r = NewProcfsSource("/proc")->Scan({{getpid()}, {}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto self = std::find_if(r->begin(), r->end(),
                           [](const HostProcess& p) { return p.host_pid == getpid(); });
  ASSERT_NE(self, r->end());
  EXPECT_EQ(self->ns_pids.back(), getpid());
  EXPECT_GT(self->start_time, 0u);
  EXPECT_TRUE(self->maps_read);
}

}  // namespace
}  // namespace vgpu::monitor
