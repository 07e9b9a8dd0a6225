#include "region.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = 1ull << 20;

class RegionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-region-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/region.cache";
  }
  void TearDown() override {
    for (auto* h : handles_) Close(h);
    fs::remove_all(dir_);
  }
  vgpu_region_handle* Open(const std::string& path) {
    auto* h = new vgpu_region_handle;
    EXPECT_EQ(vgpu_region_open(path.c_str(), h), 0);
    handles_.push_back(h);
    return h;
  }
  static void Close(vgpu_region_handle* h) {
    if (h->region != nullptr) munmap(h->region, sizeof(vgpu_region));
    if (h->fd >= 0) close(h->fd);
    delete h;
  }
  static uint64_t SumSlots(const vgpu_region* r, int dev) {
    uint64_t sum = 0;
    for (const auto& p : r->procs) sum += p.mem_used[dev] + p.mem_overhead[dev];
    return sum;
  }
  void WriteFile(const std::string& bytes) { std::ofstream(path_, std::ios::binary) << bytes; }

  std::string dir_;
  std::string path_;
  std::vector<vgpu_region_handle*> handles_;
};

TEST_F(RegionTest, CreatesVersionedHeaderAndSharesDevices) {
  auto* a = Open(path_);
  ASSERT_EQ(a->is_private, 0);
  EXPECT_EQ(a->region->header.magic, VGPU_REGION_MAGIC);
  EXPECT_EQ(a->region->header.version, VGPU_REGION_VERSION);
  EXPECT_EQ(a->region->header.file_size, sizeof(vgpu_region));
  EXPECT_EQ(fs::file_size(path_), sizeof(vgpu_region));
  EXPECT_EQ(vgpu_region_register_device(a, "GPU-a", 80 * kMiB, 10 * kMiB, 30, VGPU_SM_POLICY_FORCE),
            0);
  EXPECT_EQ(vgpu_region_register_device(a, "GPU-b", 80 * kMiB, VGPU_MEM_UNLIMITED, 0,
                                        VGPU_SM_POLICY_DEFAULT),
            1);

  auto* b = Open(path_);  // a second process's view of the same file
  ASSERT_EQ(b->is_private, 0);
  // The first registration fixes the limit; later ones find the record.
  EXPECT_EQ(vgpu_region_register_device(b, "GPU-b", 80 * kMiB, 5 * kMiB, 0, VGPU_SM_POLICY_DISABLE),
            1);
  EXPECT_EQ(vgpu_region_register_device(b, "GPU-a", 80 * kMiB, 5 * kMiB, 0, VGPU_SM_POLICY_DISABLE),
            0);
  EXPECT_EQ(b->region->devices[0].sm_policy, VGPU_SM_POLICY_FORCE);  // issue 45: it was never set
  EXPECT_EQ(b->region->devices[1].sm_policy, VGPU_SM_POLICY_DEFAULT);
  EXPECT_EQ(b->region->devices[1].mem_limit, 0u);  // unlimited, in the layout's words
  EXPECT_EQ(vgpu_region_limit(&b->region->devices[1]), VGPU_MEM_UNLIMITED);
  EXPECT_EQ(b->region->devices[0].mem_limit, 10 * kMiB);
  EXPECT_EQ(b->region->devices[0].sm_limit, 30u);
}

TEST_F(RegionTest, AdmissionStopsExactlyAtTheLimit) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  uint64_t start = 0;
  ASSERT_EQ(vgpu_proc_start_time(getpid(), &start), 0);
  ASSERT_EQ(vgpu_region_claim_slot(h, getpid(), start, 1), 0);
  EXPECT_EQ(vgpu_region_reserve(h, d, 6 * kMiB), 0);
  EXPECT_EQ(vgpu_region_reserve(h, d, 4 * kMiB + 1), -1);
  EXPECT_EQ(vgpu_region_device_used(h, d), 6 * kMiB);  // a refusal changes nothing
  EXPECT_EQ(vgpu_region_reserve(h, d, 4 * kMiB), 0);   // exactly at the limit
  EXPECT_EQ(vgpu_region_reserve(h, d, 1), -1);
  vgpu_region_release(h, d, 10 * kMiB);
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
  vgpu_region_release(h, d, 1 * kMiB);  // never below zero
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
  vgpu_region_set_overhead(h, d, 3 * kMiB);
  EXPECT_EQ(vgpu_region_device_used(h, d), 3 * kMiB);
  vgpu_region_set_overhead(h, d, 1 * kMiB);
  EXPECT_EQ(vgpu_region_device_used(h, d), 1 * kMiB);
  EXPECT_EQ(vgpu_region_reserve(h, d, 9 * kMiB + 1), -1);
  vgpu_region_release_slot(h);
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
}

TEST_F(RegionTest, DeadProcessIsReaped) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  const pid_t child = fork();
  if (child == 0) {
    vgpu_region_handle c;
    vgpu_region_open(path_.c_str(), &c);
    uint64_t st = 0;
    vgpu_proc_start_time(getpid(), &st);
    if (vgpu_region_claim_slot(&c, getpid(), st, 1) != 0) _exit(2);
    if (vgpu_region_reserve(&c, d, 7 * kMiB) != 0) _exit(3);
    _exit(0);  // exits holding 7 MiB, as a crashed process would
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(vgpu_region_device_used(h, d), 7 * kMiB);
  EXPECT_EQ(vgpu_region_reap(h, 0), 1);
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
}

TEST_F(RegionTest, ReusedPidIsReapedOnlyWithStartTimeCheck) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  // Slot of "pid 1" with a start time pid 1 does not have: a reused pid.
  vgpu_region_proc& slot = h->region->procs[5];
  slot.pid = 1;
  slot.start_time = 987654321;
  slot.status = VGPU_SLOT_ACTIVE;
  slot.mem_used[d] = 2 * kMiB;
  h->region->devices[d].mem_used = 2 * kMiB;
  EXPECT_EQ(vgpu_region_reap(h, 0), 0);  // pid 1 is alive
  EXPECT_EQ(vgpu_region_reap(h, 1), 1);  // but it is not the same process
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
  EXPECT_EQ(slot.pid, 0);
}

// A child that claims a slot, reserves `bytes` and exits without releasing it (as if killed).
// Returns its pid, not waited for when `leave_zombie`.
pid_t ChildHoldingThenGone(const std::string& path, int dev, uint64_t bytes, bool leave_zombie) {
  const pid_t child = fork();
  if (child == 0) {
    vgpu_region_handle c;
    vgpu_region_open(path.c_str(), &c);
    uint64_t st = 0;
    vgpu_proc_start_time(getpid(), &st);
    if (vgpu_region_claim_slot(&c, getpid(), st, 1) != 0) _exit(2);
    if (vgpu_region_reserve(&c, dev, bytes) != 0) _exit(3);
    _exit(0);
  }
  if (!leave_zombie) {
    int status = 0;
    EXPECT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  return child;
}

int SlotOf(const vgpu_region* r, pid_t pid) {
  for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) {
    if (r->procs[s].pid == pid) return s;
  }
  return -1;
}

// Found by review for issue 21: a freed slot kept its last owner's start time and ACTIVE status,
// so a full reap (run before every refused allocation) that looked at a slot in the instant after
// a new process took its pid and before it wrote its own start time compared the new owner with
// its predecessor's start time and reaped a live process: its usage vanished from the total and
// the slot could be claimed twice.
TEST_F(RegionTest, SlotBeingClaimedIsNotTakenForAReusedPid) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  const pid_t gone = ChildHoldingThenGone(path_, d, kMiB, false);
  const int s = SlotOf(h->region, gone);
  ASSERT_GE(s, 0);
  EXPECT_EQ(vgpu_region_reap(h, 0), 1);
  EXPECT_EQ(h->region->procs[s].start_time, 0u);  // forgotten with its owner
  // A live process has just taken the slot (its CAS on pid) and written nothing else yet. It starts
  // a few clock ticks (10 ms) after its predecessor, so their start times differ.
  usleep(30000);
  const pid_t claimer = fork();
  if (claimer == 0) {
    pause();
    _exit(0);
  }
  __atomic_store_n(&h->region->procs[s].pid, claimer, __ATOMIC_RELEASE);
  EXPECT_EQ(vgpu_region_reap(h, 1), 0);
  EXPECT_EQ(h->region->procs[s].pid, claimer);
  // Same for a slot given back at a normal exit.
  kill(claimer, SIGKILL);
  waitpid(claimer, nullptr, 0);
  EXPECT_EQ(vgpu_region_reap(h, 0), 1);
  auto* other = Open(path_);
  uint64_t st = 0;
  ASSERT_EQ(vgpu_proc_start_time(getpid(), &st), 0);
  ASSERT_EQ(vgpu_region_claim_slot(other, getpid(), st, 1), 0);
  const int mine = other->slot;
  vgpu_region_release_slot(other);
  EXPECT_EQ(h->region->procs[mine].start_time, 0u);
}

// A process killed while its parent does not wait for it (an orphan under a container's PID 1
// that never reaps) stays a zombie: kill(pid, 0) still succeeds and its start time still matches,
// yet the driver freed its memory at exit. The full check (before refusing an allocation) reaps it.
TEST_F(RegionTest, ZombieIsReapedByTheFullCheck) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  const pid_t zombie = ChildHoldingThenGone(path_, d, 7 * kMiB, true);
  for (int i = 0; i < 2000; ++i) {  // until it has exited (up to 2 s)
    char state = 0;
    std::ifstream stat("/proc/" + std::to_string(zombie) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close_paren = text.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < text.size()) {
      state = text[close_paren + 2];
    }
    if (state == 'Z') break;
    usleep(1000);
  }
  EXPECT_EQ(vgpu_region_device_used(h, d), 7 * kMiB);
  EXPECT_EQ(vgpu_region_reap(h, 0), 0);  // the cheap check (at a claim) does not read /proc
  EXPECT_EQ(vgpu_region_reap(h, 1), 1);
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
  int status = 0;
  EXPECT_EQ(waitpid(zombie, &status, 0), zombie);
}

TEST_F(RegionTest, SigkillDuringAdmissionLeavesConsistentTotals) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 64 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    const pid_t child = fork();
    if (child == 0) {
      vgpu_region_handle c;
      vgpu_region_open(path_.c_str(), &c);
      uint64_t st = 0;
      vgpu_proc_start_time(getpid(), &st);
      vgpu_region_claim_slot(&c, getpid(), st, 1);
      for (uint64_t i = 1;; ++i) {
        if (vgpu_region_reserve(&c, d, i % 4096 + 1) == 0 && i % 3 != 0) {
          vgpu_region_release(&c, d, i % 4096 + 1);
        }
        if (i % 5 == 0) vgpu_region_set_overhead(&c, d, i % 1000);
      }
    }
    usleep(200 + rng() % 2000);
    kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    // Whatever instruction it died at, the total equals what the slots hold.
    const uint64_t used = vgpu_region_device_used(h, d);
    if (used != SumSlots(h->region, d)) {
      // Only possible while the dead owner's lock is pending recovery: the next locker fixes it.
      vgpu_region_release(h, d, 0);
    }
    EXPECT_EQ(vgpu_region_device_used(h, d), SumSlots(h->region, d)) << "round " << round;
  }
  vgpu_region_reap(h, 1);
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
}

TEST_F(RegionTest, CorruptFilesFallBackToPrivateRegion) {
  struct Case {
    const char* name;
    std::string content;
  } cases[] = {
      {"truncated", std::string(100, '\x01')},
      {"bad magic", std::string(sizeof(vgpu_region), '\x7f')},
  };
  for (auto& c : cases) {
    WriteFile(c.content);
    auto* h = Open(path_);
    EXPECT_EQ(h->is_private, 1) << c.name;
    EXPECT_NE(vgpu_region_failure(h), nullptr) << c.name;  // the caller fails closed
    // Limits still hold in the private region.
    const int d =
        vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 1 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
    EXPECT_EQ(vgpu_region_reserve(h, d, 1 * kMiB), 0) << c.name;
    EXPECT_EQ(vgpu_region_reserve(h, d, 1), -1) << c.name;
    fs::remove(path_);
  }
}

TEST_F(RegionTest, ForeignVersionFallsBack) {
  {
    auto* h = Open(path_);
    ASSERT_EQ(h->is_private, 0);
    h->region->header.version = 99;
  }
  auto* h = Open(path_);
  EXPECT_EQ(h->is_private, 1);
}

// Found by fuzz_region_header: the library used a region whose header gives another header size,
// which the node monitor skips (core/monitor/region_header.cpp), so the container went unseen.
// Every header field the monitor checks, the library checks too.
TEST_F(RegionTest, CorruptHeaderFieldsFallBack) {
  struct Case {
    const char* name;
    void (*corrupt)(vgpu_region_header&);
  } cases[] = {
      {"header size", [](vgpu_region_header& h) { h.header_size = 8; }},
      {"file size", [](vgpu_region_header& h) { h.file_size = 4096; }},
      {"max devices", [](vgpu_region_header& h) { h.max_devices = 8; }},
      {"max procs", [](vgpu_region_header& h) { h.max_procs = 1; }},
      {"device count", [](vgpu_region_header& h) { h.device_count = VGPU_REGION_MAX_DEVICES + 1; }},
  };
  for (auto& c : cases) {
    {
      auto* h = Open(path_);
      ASSERT_EQ(h->is_private, 0) << c.name;
      c.corrupt(h->region->header);
    }
    auto* h = Open(path_);
    EXPECT_EQ(h->is_private, 1) << c.name;
    fs::remove(path_);
  }
}

TEST_F(RegionTest, UnusablePathFallsBack) {
  auto* h = Open(dir_ + "/no/such/dir/region.cache");
  EXPECT_EQ(h->is_private, 1);
  EXPECT_STREQ(vgpu_region_failure(h), "it cannot be opened");
  auto* d = Open(dir_);  // a directory
  EXPECT_EQ(d->is_private, 1);
  EXPECT_NE(vgpu_region_failure(d), nullptr);
}

// The region path may lie in a folder others write to (/tmp/cudevshr.cache, HAMi's default): a
// link there to another file must not get that file grown, laid out or made world-writable.
TEST_F(RegionTest, LinksAndSpecialFilesAreRefusedNotFollowed) {
  const std::string victim = dir_ + "/victim";
  {
    std::ofstream(victim) << "";  // empty: the library would have grown it to a region
  }
  fs::permissions(victim, fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(victim, path_);
  auto* sym = Open(path_);
  EXPECT_EQ(sym->is_private, 1);
  EXPECT_STREQ(vgpu_region_failure(sym), "it is a symbolic link (refused)");
  fs::remove(path_);
  fs::create_hard_link(victim, path_);
  auto* hard = Open(path_);
  EXPECT_EQ(hard->is_private, 1);
  EXPECT_STREQ(vgpu_region_failure(hard), "it has other names (a hard link to another file?)");
  fs::remove(path_);
  EXPECT_EQ(fs::file_size(victim), 0u);
  EXPECT_EQ(fs::status(victim).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // A FIFO opens at once (O_NONBLOCK) and is refused, rather than blocking the process forever.
  ASSERT_EQ(mkfifo(path_.c_str(), 0666), 0);
  auto* fifo = Open(path_);
  EXPECT_EQ(fifo->is_private, 1);
  EXPECT_STREQ(vgpu_region_failure(fifo), "it is not a regular file");
}

// A region file someone else made (`vgpu run` makes its own private) keeps its mode; one the
// library makes is shared by the container's users (0666).
TEST_F(RegionTest, OnlyAFileTheLibraryCreatedIsMadeWorldWritable) {
  {
    auto* made = Open(path_);
    ASSERT_EQ(made->is_private, 0);
  }
  EXPECT_EQ(fs::status(path_).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::group_write | fs::perms::others_read | fs::perms::others_write);
  const std::string mine = dir_ + "/private.cache";
  { std::ofstream(mine) << ""; }
  fs::permissions(mine, fs::perms::owner_read | fs::perms::owner_write);
  auto* h = Open(mine);
  ASSERT_EQ(h->is_private, 0);
  EXPECT_EQ(fs::status(mine).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
}

// Issue 42, item 8: a live process hung when its region's device count was overwritten with
// 2^32-1 (walking 4 billion "records" past the 16 that exist, it took slot bytes for a mutex). The
// count is clamped wherever it is read, and the region is marked unusable (fail closed).
TEST_F(RegionTest, AScribbledDeviceCountNeitherHangsNorWalksPastTheRecords) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  uint64_t st = 0;
  ASSERT_EQ(vgpu_proc_start_time(getpid(), &st), 0);
  ASSERT_EQ(vgpu_region_claim_slot(h, getpid(), st, 1), 0);
  ASSERT_EQ(vgpu_region_reserve(h, d, kMiB), 0);
  EXPECT_EQ(vgpu_region_failure(h), nullptr);
  __atomic_store_n(&h->region->header.device_count, 0xffffffffu, __ATOMIC_RELEASE);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(vgpu_region_device_count(h), static_cast<uint32_t>(VGPU_REGION_MAX_DEVICES));
  EXPECT_STREQ(vgpu_region_failure(h), "its device count is corrupt");
  EXPECT_NE(h->region->header.flags & VGPU_REGION_FLAG_UNUSABLE, 0u);  // for the node monitor
  EXPECT_EQ(
      vgpu_region_register_device(h, "GPU-b", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT),
      -1);  // full
  EXPECT_EQ(
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT), d);
  vgpu_region_release_slot(h);  // what exit and the reaper do: 16 records, each lock once
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  // The container's next process is told, and fails closed too.
  auto* next = Open(path_);
  EXPECT_EQ(next->is_private, 1);
  EXPECT_NE(vgpu_region_failure(next), nullptr);
}

// Bytes that look like a device lock held by a live thread (our own) block a plain lock forever;
// the library waits a bounded time and refuses what needed the lock.
TEST_F(RegionTest, ALockThatLooksHeldForeverIsWaitedForABoundedTime) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  uint64_t st = 0;
  ASSERT_EQ(vgpu_proc_start_time(getpid(), &st), 0);
  ASSERT_EQ(vgpu_region_claim_slot(h, getpid(), st, 1), 0);
  // The robust mutex's lock word: owned by a thread that lives (its death would free it).
  std::thread holder_thread;
  pid_t holder = 0;
  std::atomic<bool> release{false};
  holder_thread = std::thread([&] {
    holder = gettid();
    while (!release.load()) usleep(1000);
  });
  while (__atomic_load_n(&holder, __ATOMIC_ACQUIRE) == 0) usleep(100);
  std::memcpy(h->region->devices[d].lock, &holder, sizeof(holder));  // __lock is the first word
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(vgpu_region_reserve(h, d, kMiB), -1);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(1500));
  EXPECT_LT(waited, std::chrono::seconds(10));
  release = true;
  holder_thread.join();
}

// Issue 42, item 2: a limit of 0 bytes is recorded as such, never as "unlimited".
TEST_F(RegionTest, AZeroLimitAdmitsNothing) {
  auto* h = Open(path_);
  const int d = vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 0, 0, VGPU_SM_POLICY_DEFAULT);
  EXPECT_EQ(h->region->devices[d].mem_limit, 0u);
  EXPECT_EQ(h->region->devices[d].flags & VGPU_DEVICE_FLAG_NO_MEMORY, VGPU_DEVICE_FLAG_NO_MEMORY);
  EXPECT_EQ(vgpu_region_limit(&h->region->devices[d]), 0u);
  uint64_t st = 0;
  ASSERT_EQ(vgpu_proc_start_time(getpid(), &st), 0);
  ASSERT_EQ(vgpu_region_claim_slot(h, getpid(), st, 1), 0);
  EXPECT_EQ(vgpu_region_reserve(h, d, 1), -1);
  EXPECT_EQ(vgpu_region_reserve_overhead(h, d, 1), -1);
  EXPECT_EQ(vgpu_region_device_used(h, d), 0u);
}

// What a context reserves before the driver creates it: the largest context measured, clamped.
TEST_F(RegionTest, ContextReservationsCountAgainstTheLimit) {
  auto* h = Open(path_);
  const int d =
      vgpu_region_register_device(h, "GPU-a", 80 * kMiB, 10 * kMiB, 0, VGPU_SM_POLICY_DEFAULT);
  uint64_t st = 0;
  ASSERT_EQ(vgpu_proc_start_time(getpid(), &st), 0);
  ASSERT_EQ(vgpu_region_claim_slot(h, getpid(), st, 1), 0);
  EXPECT_EQ(vgpu_region_context_hint(h, d), 0u);
  vgpu_region_note_context(h, d, 3 * kMiB);
  vgpu_region_note_context(h, d, 2 * kMiB);  // the largest stays
  EXPECT_EQ(vgpu_region_context_hint(h, d), 3 * kMiB);
  h->region->devices[d].context_bytes = UINT64_MAX;  // scribbled
  EXPECT_EQ(vgpu_region_context_hint(h, d), 4ull << 30);
  ASSERT_EQ(vgpu_region_reserve(h, d, 6 * kMiB), 0);
  EXPECT_EQ(vgpu_region_reserve_overhead(h, d, 4 * kMiB + 1), -1);
  EXPECT_EQ(vgpu_region_reserve_overhead(h, d, 4 * kMiB), 0);
  EXPECT_EQ(vgpu_region_slot_overhead(h, d), 4 * kMiB);
  EXPECT_EQ(vgpu_region_device_used(h, d), 10 * kMiB);
  vgpu_region_release_overhead(h, d, 4 * kMiB);
  EXPECT_EQ(vgpu_region_device_used(h, d), 6 * kMiB);
  EXPECT_EQ(vgpu_region_slot_overhead(h, d), 0u);
}

TEST_F(RegionTest, CreatorKilledBeforeMagicIsReinitialised) {
  // An all-zero file of the right size: the creator died after ftruncate.
  WriteFile(std::string(sizeof(vgpu_region), '\0'));
  auto* h = Open(path_);
  EXPECT_EQ(h->is_private, 0);
  EXPECT_EQ(h->region->header.magic, VGPU_REGION_MAGIC);
}

TEST(StatParse, StartTimeField22) {
  uint64_t v = 0;
  const char* line =
      "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
      "98765 1000 10 18446744073709551615";
  ASSERT_EQ(vgpu_parse_stat_start_time(line, &v), 0);
  EXPECT_EQ(v, 98765u);
  EXPECT_EQ(vgpu_parse_stat_start_time("garbage", &v), -1);
  EXPECT_EQ(vgpu_parse_stat_start_time("1 (x) S 1 2", &v), -1);
  EXPECT_EQ(vgpu_proc_start_time(getpid(), &v), 0);
  EXPECT_GT(v, 0u);
}

}  // namespace
