#include "monitor/region_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "tests/monitor/temp_dir.h"

namespace vgpu::monitor {
namespace {

namespace fs = std::filesystem;

class RegionFileTest : public ::testing::Test {
 protected:
  // A region file as libvgpu lays it out, with one device and one active slot.
  void MakeRegion(const std::string& name) const {
    auto r = std::make_unique<vgpu_region>();
    std::memset(r.get(), 0, sizeof(vgpu_region));
    r->header.magic = VGPU_REGION_MAGIC;
    r->header.version = VGPU_REGION_VERSION;
    r->header.header_size = sizeof(vgpu_region_header);
    r->header.file_size = sizeof(vgpu_region);
    r->header.max_devices = VGPU_REGION_MAX_DEVICES;
    r->header.max_procs = VGPU_REGION_MAX_PROCS;
    r->header.device_count = 1;
    (void)std::snprintf(r->devices[0].uuid, sizeof r->devices[0].uuid, "GPU-0000");
    r->devices[0].mem_limit = 100;
    r->devices[0].sm_limit = 30;
    r->devices[0].sm_policy = 2;
    r->procs[3].pid = 77;
    r->procs[3].status = VGPU_SLOT_ACTIVE;
    r->procs[3].start_time = 1234;
    r->procs[3].mem_used[0] = 10;
    r->procs[3].mem_overhead[0] = 5;
    r->procs[4].pid = 78;  // still claiming
    r->procs[4].status = VGPU_SLOT_CLAIMING;
    r->procs[1000].pid = 90;  // far from the others
    r->procs[1000].status = VGPU_SLOT_ACTIVE;
    r->procs[1000].start_time = 4321;
    std::ofstream(dir_ + "/" + name, std::ios::binary)
        .write(reinterpret_cast<const char*>(r.get()), sizeof(vgpu_region));
  }
  vgpu_region ReadBack(const std::string& name) const {
    vgpu_region r{};
    std::ifstream(dir_ + "/" + name, std::ios::binary)
        .read(reinterpret_cast<char*>(&r), sizeof(vgpu_region));
    return r;
  }

  TempDir tmp_{"vgpu-region-file-test"};
  std::string dir_ = tmp_.path();
};

TEST_F(RegionFileTest, ReadsAndWritesOnlyTheMonitorsFields) {
  MakeRegion("a.cache");
  auto file = RegionFile::Open(tmp_.fd(), "a.cache");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  RegionFile& f = **file;
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/a.cache").c_str(), &st), 0);
  EXPECT_EQ(f.id(), (FileId{major(st.st_dev), minor(st.st_dev), st.st_ino}));
  EXPECT_TRUE(f.Check(tmp_.fd(), "a.cache").ok());
  ASSERT_EQ(f.DeviceCount(), 1u);
  const RegionDevice d = f.Device(0);
  EXPECT_EQ(d.uuid, "GPU-0000");
  EXPECT_EQ(d.mem_limit, 100u);
  EXPECT_EQ(d.sm_limit, 30u);
  EXPECT_EQ(d.sm_policy, 2u);
  const RegionSlot s = f.Slot(3);
  EXPECT_EQ(s.pid, 77);
  EXPECT_EQ(s.start_time, 1234u);
  EXPECT_EQ(s.mem_used[0], 10u);
  EXPECT_EQ(s.mem_overhead[0], 5u);
  EXPECT_EQ(f.Slot(4).pid, 0);  // claiming: not readable yet
  EXPECT_EQ(f.Slot(5).pid, 0);

  f.WriteSharing(0, VGPU_SM_SHARING_ALONE);
  f.WriteHostPid(3, 4077, 1234);
  const vgpu_region back = ReadBack("a.cache");
  EXPECT_EQ(back.devices[0].sm_sharing, VGPU_SM_SHARING_ALONE);
  EXPECT_EQ(back.procs[3].host_pid, 4077);
  EXPECT_EQ(back.procs[3].host_start_time, 1234u);
}

TEST_F(RegionFileTest, RefusesWhatIsNotARegion) {
  MakeRegion("good.cache");
  std::ofstream(dir_ + "/short.cache") << "0123456789";
  ASSERT_EQ(symlink((dir_ + "/good.cache").c_str(), (dir_ + "/link.cache").c_str()), 0);
  ASSERT_EQ(mkfifo((dir_ + "/fifo.cache").c_str(), 0600), 0);
  fs::create_directories(dir_ + "/dir.cache");
  MakeRegion("twice.cache");
  ASSERT_EQ(link((dir_ + "/twice.cache").c_str(), (dir_ + "/other-name.cache").c_str()), 0);
  ASSERT_EQ(symlink("/etc/shadow", (dir_ + "/shadow.cache").c_str()), 0);
  ASSERT_EQ(symlink(dir_.c_str(), (dir_ + "/dirlink.cache").c_str()), 0);
  const bool have_device =
      mknod((dir_ + "/null.cache").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0;
  struct Case {
    const char* name;
    const char* want;
    StatusCode code;
  };
  const Case cases[] = {
      {"short.cache", "truncated: 10 bytes", StatusCode::kInvalidArgument},
      {"link.cache", "symbolic link", StatusCode::kInvalidArgument},
      {"shadow.cache", "symbolic link", StatusCode::kInvalidArgument},
      {"dirlink.cache", "symbolic link", StatusCode::kInvalidArgument},
      {"fifo.cache", "not a regular file (a FIFO)", StatusCode::kInvalidArgument},
      {"dir.cache", "not a regular file (a directory)", StatusCode::kInvalidArgument},
      {"twice.cache", "has 2 names (hard links)", StatusCode::kInvalidArgument},
      {"other-name.cache", "has 2 names (hard links)", StatusCode::kInvalidArgument},
      {"null.cache", "not a regular file (a character device)", StatusCode::kInvalidArgument},
      {"missing.cache", "gone", StatusCode::kNotFound}};
  for (const Case& c : cases) {
    if (std::string(c.name) == "null.cache" && !have_device) continue;  // no CAP_MKNOD here
    auto f = RegionFile::Open(tmp_.fd(), c.name);
    ASSERT_FALSE(f.ok()) << c.name;
    EXPECT_NE(f.status().message().find(c.want), std::string::npos)
        << c.name << ": " << f.status().message();
    EXPECT_EQ(f.status().code(), c.code) << c.name;
  }
}

// Only a regular file is ever opened: a FIFO (or a device node) is looked at through an O_PATH
// descriptor. Seen from the FIFO: a writer waiting for a reader stays waiting. Before, the monitor
// opened it (O_RDWR | O_NONBLOCK), which let the writer through — and opening a device node the
// container made (with CAP_MKNOD) acts on the host's device.
TEST_F(RegionFileTest, NeverOpensAFifo) {
  const std::string fifo = dir_ + "/fifo.cache";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::atomic<bool> writer_in{false};
  std::thread writer([&] {
    const int fd = open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // blocks until a reader opens it
    writer_in = true;
    if (fd >= 0) close(fd);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int i = 0; i < 3; ++i) {
    auto f = RegionFile::Open(tmp_.fd(), "fifo.cache");
    EXPECT_FALSE(f.ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(writer_in) << "the monitor opened the FIFO";
  // Let the writer go.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  writer.join();
  if (reader >= 0) close(reader);
}

// The device records are the container's: a record scribbled after the region was opened (a UUID
// with bytes that would break the metrics page and the JSON answer, an SM limit of 2^32-1, a
// device count of 2^32-1) is found by the next check, not read into the snapshot.
TEST_F(RegionFileTest, ScribbledHeaderAndDeviceRecordsFailTheCheck) {
  struct Case {
    const char* name;
    std::function<void(vgpu_region&)> scribble;
    const char* want;
  };
  const Case cases[] = {
      {"device count", [](vgpu_region& r) { r.header.device_count = 0xffffffffu; },
       "corrupt: device_count 4294967295"},
      {"UUID bytes", [](vgpu_region& r) { std::memcpy(r.devices[0].uuid, "GPU-\xff\n", 7); },
       "corrupt: device record 0: UUID"},
      {"UUID without its NUL",
       [](vgpu_region& r) { std::memset(r.devices[0].uuid, 'A', sizeof r.devices[0].uuid); },
       "UUID without an end"},
      {"SM limit", [](vgpu_region& r) { r.devices[0].sm_limit = 0xffffffffu; },
       "SM limit 4294967295"},
      {"same GPU twice",
       [](vgpu_region& r) {
         r.header.device_count = 2;
         std::memcpy(r.devices[1].uuid, r.devices[0].uuid, sizeof r.devices[0].uuid);
       },
       "names the GPU of record 0 again"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    MakeRegion("a.cache");
    auto a = RegionFile::Open(tmp_.fd(), "a.cache");
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE((*a)->CheckContent().ok());
    const int fd = open((dir_ + "/a.cache").c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    void* map = mmap(nullptr, sizeof(vgpu_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(map, MAP_FAILED);
    c.scribble(*static_cast<vgpu_region*>(map));
    munmap(map, sizeof(vgpu_region));
    const Status s = (*a)->CheckContent();
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.ToString();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    a->reset();
    auto again = RegionFile::Open(tmp_.fd(), "a.cache");
    ASSERT_FALSE(again.ok());
    EXPECT_NE(again.status().message().find(c.want), std::string::npos)
        << again.status().ToString();
    ASSERT_EQ(unlink((dir_ + "/a.cache").c_str()), 0);
  }
}

TEST_F(RegionFileTest, CheckNoticesTruncationAndReplacement) {
  MakeRegion("a.cache");
  MakeRegion("b.cache");
  auto a = RegionFile::Open(tmp_.fd(), "a.cache");
  auto b = RegionFile::Open(tmp_.fd(), "b.cache");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(truncate((dir_ + "/a.cache").c_str(), 4096), 0);
  EXPECT_NE((*a)->Check(tmp_.fd(), "a.cache").message().find("size changed to 4096"),
            std::string::npos);
  MakeRegion("c.cache");
  ASSERT_EQ(rename((dir_ + "/c.cache").c_str(), (dir_ + "/b.cache").c_str()), 0);
  EXPECT_NE((*b)->Check(tmp_.fd(), "b.cache").message().find("replaced"), std::string::npos);
  ASSERT_EQ(unlink((dir_ + "/b.cache").c_str()), 0);
  EXPECT_FALSE((*b)->Check(tmp_.fd(), "b.cache").ok());
}

// Occupied slots are found with pread (free slots stay unmapped), whatever their index; Identity
// reads a slot's owner, without its start time while it is being claimed.
TEST_F(RegionFileTest, SweepsOccupiedSlotsAndReadsOwners) {
  MakeRegion("a.cache");
  auto a = RegionFile::Open(tmp_.fd(), "a.cache");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ((*a)->OccupiedSlots(), (std::vector<int>{3, 4, 1000}));
  const SlotIdentity active = (*a)->Identity(3);
  EXPECT_EQ(active.pid, 77);
  EXPECT_EQ(active.start_time, 1234u);
  const SlotIdentity claiming = (*a)->Identity(4);
  EXPECT_EQ(claiming.pid, 78);
  EXPECT_EQ(claiming.start_time, 0u);
  EXPECT_EQ((*a)->Identity(0).pid, 0);
  EXPECT_EQ((*a)->Identity(1000).start_time, 4321u);
  EXPECT_TRUE((*a)->CheckContent().ok());
  ASSERT_EQ(truncate((dir_ + "/a.cache").c_str(), 4096), 0);
  EXPECT_NE((*a)->CheckContent().message().find("size changed to 4096"), std::string::npos);
  // Truncated: the slots beyond the end read as free, through the guarded mapping.
  EXPECT_TRUE((*a)->OccupiedSlots().empty());
}

// A container may truncate its own region while the monitor reads it: the read beyond the new end
// would raise SIGBUS; the monitor reads zeros there instead and goes on.
TEST_F(RegionFileTest, AFileTruncatedUnderTheMappingReadsAsZeros) {
  MakeRegion("a.cache");
  auto a = RegionFile::Open(tmp_.fd(), "a.cache");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)->Slot(3).pid, 77);
  ASSERT_EQ(truncate((dir_ + "/a.cache").c_str(), 4096), 0);
  EXPECT_EQ((*a)->Slot(3).pid, 0);
  EXPECT_EQ((*a)->Device(0).mem_limit, 100u);  // the first page is still in the file
  (*a)->WriteHostPid(3, 1, 1);                 // harmless: the page is the monitor's own now
}

// A SIGBUS outside guarded mappings keeps its default action.
TEST_F(RegionFileTest, OtherBusErrorsStillEndTheProcess) {
  EXPECT_EXIT(
      {
        MakeRegion("a.cache");
        auto a = RegionFile::Open(tmp_.fd(), "a.cache");  // installs the handler
        const int fd = open((dir_ + "/b.bin").c_str(), O_RDWR | O_CREAT, 0600);
        (void)ftruncate(fd, 4096);
        auto* p = static_cast<volatile char*>(
            mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        (void)p[4096];  // beyond the file: SIGBUS, not guarded
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

}  // namespace
}  // namespace vgpu::monitor
