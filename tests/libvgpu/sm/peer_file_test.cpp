#include "peer_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace vgpu::sm {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/vgpu-peer-test.XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir != nullptr ? dir : "/tmp";
}

// Runs `body` in a child process (fcntl slot locks are per process) and waits for it.
template <typename Body>
int InChild(Body body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST(PeerFile, CreatesAMissingLockDirectoryOpenToAll) {
  const std::string dir = TempDir() + "/vgpulock";
  PeerFile peers;
  const char* why = nullptr;
  ASSERT_TRUE(peers.Open(dir.c_str(), "00ff", 1, &why)) << why;
  struct stat st {};
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  ASSERT_EQ(stat((dir + "/vgpu-gpu4-00ff").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
}

TEST(PeerFile, SaysWhyWhenTheDirectoryCannotBeMade) {
  const std::string file = TempDir() + "/plain";
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(fclose(f), 0);
  PeerFile peers;
  const char* why = nullptr;
  EXPECT_FALSE(peers.Open((file + "/sub").c_str(), "00ff", 1, &why));
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("lock directory"), std::string::npos) << why;
  EXPECT_EQ(peers.Scan(0).active, 0);
}

TEST(PeerFile, ADeadTenantsSlotIsReusedAndStartsOver) {
  const std::string dir = TempDir();
  // A tenant of high priority, active until t=5 s, publishes three spans and exits.
  ASSERT_EQ(InChild([&] {
              PeerFile other;
              const char* why = nullptr;
              if (!other.Open(dir.c_str(), "ab", 0, &why)) return 1;
              other.SetActiveUntil(5'000'000'000);
              const TimeSpan spans[] = {{100, 200}, {300, 400}, {900, 1000}};
              other.Publish(spans, 3);
              return 0;
            }),
            0);
  PeerFile me;
  const char* why = nullptr;
  ASSERT_TRUE(me.Open(dir.c_str(), "ab", 1, &why)) << why;
  // The other process exited without clearing its slot: its lock is gone, so the slot is ours now
  // and starts over (its stale activity does not count).
  EXPECT_EQ(me.Scan(1'000'000'000).active, 0);
  std::vector<OwnedSpan> out(10);
  EXPECT_EQ(me.Collect(0, 2000, 0, out.data(), 10), 0);
}

TEST(PeerFile, LiveOthersAreSeenAndCollected) {
  const std::string dir = TempDir();
  int to_child[2];
  int from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    PeerFile other;
    const char* why = nullptr;
    char ok = other.Open(dir.c_str(), "cd", 0, &why) ? 'y' : 'n';
    other.SetActiveUntil(5'000'000'000);
    std::vector<TimeSpan> spans;
    spans.reserve(5000);
    for (int64_t i = 0; i < 5000; ++i)
      spans.push_back({i * 1000, i * 1000 + 500});  // wraps the ring
    other.Publish(spans.data(), static_cast<int>(spans.size()));
    (void)!write(from_child[1], &ok, 1);
    char done = 0;
    (void)!read(to_child[0], &done, 1);  // keep the slot (and its lock) until the parent looked
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(from_child[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  PeerFile me;
  const char* why = nullptr;
  ASSERT_TRUE(me.Open(dir.c_str(), "cd", 1, &why)) << why;
  const PeerScan scan = me.Scan(1'000'000'000);
  EXPECT_EQ(scan.active, 1);
  EXPECT_TRUE(scan.high_priority_active);
  EXPECT_EQ(me.Scan(6'000'000'000).active, 0);  // its activity ended
  std::vector<OwnedSpan> out(100);
  // The newest spans are there; the ones the ring overwrote are not.
  int n = me.Collect(4'990'000, 5'000'000, 0, out.data(), 100);
  ASSERT_EQ(n, 10);
  for (int i = 0; i < n; ++i) {
    EXPECT_GE(out[i].start, 4'990'000 - 1000);
    EXPECT_EQ(out[i].end - out[i].start, 500);
    EXPECT_GE(out[i].owner, 0);
  }
  n = me.Collect(0, 1000, 0, out.data(), 100);
  EXPECT_EQ(n, 0);
  // Our own spans are never "others".
  const TimeSpan mine[] = {{4'995'000, 4'996'000}};
  me.Publish(mine, 1);
  n = me.Collect(4'995'000, 4'996'000, 0, out.data(), 100);
  EXPECT_EQ(n, 1);
  (void)!write(to_child[1], "x", 1);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(PeerFile, GpuBoundTenantsTakeTurnsInSlotOrder) {
  const std::string dir = TempDir();
  int to_child[2];
  int from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    PeerFile other;
    const char* why = nullptr;
    char ok = other.Open(dir.c_str(), "ef", 1, &why) ? 'y' : 'n';
    other.SetTurn(5'000'000'000, 30);  // a member with limit 30 until t = 5 s
    (void)!write(from_child[1], &ok, 1);
    char done = 0;
    (void)!read(to_child[0], &done, 1);
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(from_child[0], &ok, 1), 1);
  ASSERT_EQ(ok, 'y');
  PeerFile me;
  const char* why = nullptr;
  ASSERT_TRUE(me.Open(dir.c_str(), "ef", 1, &why)) << why;
  // Not a member yet: the other is seen, we are not in the set.
  TurnSet set = me.Turns(1'000'000'000);
  EXPECT_EQ(set.members, 1);
  EXPECT_FALSE(set.includes_me);
  me.SetTurn(8'000'000'000, 70);
  set = me.Turns(1'000'000'000);
  EXPECT_EQ(set.members, 2);
  EXPECT_EQ(set.sum_percent, 100);
  EXPECT_EQ(set.prefix_percent, 30);  // the other holds the lower slot
  EXPECT_TRUE(set.includes_me);
  // The other's claim expired: we are alone in the set (no turns).
  set = me.Turns(6'000'000'000);
  EXPECT_EQ(set.members, 1);
  EXPECT_EQ(TurnWindowFor(set, 70).length_ns, 0);
  // Leaving the set.
  me.SetTurn(0, 0);
  EXPECT_FALSE(me.Turns(1'000'000'000).includes_me);
  char done = 1;
  (void)!write(to_child[1], &done, 1);
  waitpid(pid, nullptr, 0);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Issue 42, item 5: the lock directory (/tmp/vgpulock, shared by every container of the node and by
// `vgpu run` on the host) held a tenant's link named like a GPU's file; root's libvgpu opened it,
// grew the target (/etc/passwd) to 4 MiB of zeros and would have written its slots into it.
TEST(PeerFile, LinksAndSpecialFilesInTheLockDirectoryAreRefusedAndTheirTargetsUntouched) {
  const std::string dir = TempDir();
  ASSERT_EQ(chmod(dir.c_str(), 01777), 0);
  const std::string victim = TempDir() + "/passwd";
  const std::string content = "root:x:0:0:root:/root:/bin/bash\n";
  std::ofstream(victim) << content;
  const std::string file = dir + "/vgpu-gpu4-ab";
  struct Case {
    const char* name;
    void (*make)(const std::string& victim, const std::string& file);
    const char* why;
  } const cases[] = {
      {"symbolic link",
       [](const std::string& v, const std::string& f) {
         ASSERT_EQ(symlink(v.c_str(), f.c_str()), 0);
       },
       "symbolic link"},
      {"hard link",
       [](const std::string& v, const std::string& f) { ASSERT_EQ(link(v.c_str(), f.c_str()), 0); },
       "other names"},
      {"FIFO",  // opened without blocking, then refused
       [](const std::string&, const std::string& f) { ASSERT_EQ(mkfifo(f.c_str(), 0666), 0); },
       "not a regular file"},
      {"directory",
       [](const std::string&, const std::string& f) { ASSERT_EQ(mkdir(f.c_str(), 0777), 0); },
       "cannot be opened"},
      {"file of another size",
       [](const std::string&, const std::string& f) { std::ofstream(f) << "not a vgpu file"; },
       "another size"},
  };
  for (const Case& c : cases) {
    c.make(victim, file);
    PeerFile peers;
    const char* why = nullptr;
    EXPECT_FALSE(peers.Open(dir.c_str(), "ab", 1, &why)) << c.name;
    ASSERT_NE(why, nullptr) << c.name;
    EXPECT_NE(std::string(why).find(c.why), std::string::npos) << c.name << ": " << why;
    EXPECT_EQ(Slurp(victim), content) << c.name;  // neither grown nor written
    EXPECT_EQ(peers.Scan(0).active, 0);
    ASSERT_EQ(std::system(("rm -rf " + file).c_str()), 0);
  }
}

TEST(PeerFile, ALockDirectoryThatIsALinkOrOpenToOthersWithoutTheStickyBitIsRefused) {
  const std::string target = TempDir();
  const std::string link = TempDir() + "/vgpulock";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  PeerFile peers;
  const char* why = nullptr;
  EXPECT_FALSE(peers.Open(link.c_str(), "ab", 1, &why));
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("symbolic link"), std::string::npos) << why;
  struct stat st {};
  EXPECT_NE(stat((target + "/vgpu-gpu4-ab").c_str(), &st), 0);  // nothing made through the link
  if (geteuid() == 0) {  // a directory of another user that anyone may write to, not sticky
    const std::string open_dir = TempDir();
    ASSERT_EQ(chown(open_dir.c_str(), 4242, 4242), 0);
    ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
    EXPECT_FALSE(peers.Open(open_dir.c_str(), "ab", 1, &why));
    EXPECT_NE(std::string(why).find("sticky"), std::string::npos) << why;
    ASSERT_EQ(chmod(open_dir.c_str(), 01777), 0);  // sticky: accepted, whoever owns it
    EXPECT_TRUE(peers.Open(open_dir.c_str(), "ab", 1, &why)) << why;
  }
}

// The file is shared with every tenant of the node: one that truncates it must not fault the others
// (a mapping would: SIGBUS in every limited process of the GPU).
TEST(PeerFile, ATruncatedFileFaultsNobody) {
  const std::string dir = TempDir();
  PeerFile me;
  const char* why = nullptr;
  ASSERT_TRUE(me.Open(dir.c_str(), "ab", 1, &why)) << why;
  const TimeSpan spans[] = {{100, 200}};
  me.Publish(spans, 1);
  ASSERT_EQ(truncate((dir + "/vgpu-gpu4-ab").c_str(), 0), 0);
  EXPECT_EQ(me.Scan(0).active, 0);
  std::vector<OwnedSpan> out(10);
  EXPECT_EQ(me.Collect(0, 1000, -1, out.data(), 10), 0);
  me.SetActiveUntil(5);
  me.SetTurn(1'000'000'000, 30);
  me.Publish(spans, 1);
  EXPECT_TRUE(me.Turns(0).includes_me);  // written again past the cut
}

// Issue 42, item 4: whatever another tenant writes into the file (here: random bytes, over and
// over), reading it neither faults nor loops nor hands the sweep a span it cannot subtract.
TEST(PeerFile, RandomBytesFromAnotherTenantAreReadSafely) {
  const std::string dir = TempDir();
  PeerFile me;
  const char* why = nullptr;
  ASSERT_TRUE(me.Open(dir.c_str(), "ab", 1, &why)) << why;
  const int fd = open((dir + "/vgpu-gpu4-ab").c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  std::mt19937_64 rng(42);
  std::vector<OwnedSpan> out(64);
  std::vector<uint64_t> noise(256 * 1024 / 8);  // the heads and the first slots' rings
  for (int round = 0; round < 200; ++round) {
    if (round % 2 == 0) {  // the heads and rings, or a few words of the heads
      for (auto& w : noise) w = rng();
      ASSERT_EQ(pwrite(fd, noise.data(), noise.size() * 8, 0),
                static_cast<ssize_t>(noise.size() * 8));
    } else {
      for (int k = 0; k < 64; ++k) {
        const uint64_t word = rng() % 2 == 0 ? rng() : rng() % 1'000'000;
        const off_t at = static_cast<off_t>((rng() % (64 + 64 * 8)) * 8);
        ASSERT_EQ(pwrite(fd, &word, 8, at), 8);
      }
    }
    const int64_t now = static_cast<int64_t>(rng() % 1'000'000'000);
    const PeerScan scan = me.Scan(now);
    EXPECT_LE(scan.active, kPeerSlots - 1);
    const TurnSet set = me.Turns(now);
    EXPECT_LE(set.members, kPeerSlots);
    EXPECT_LE(set.sum_percent, kPeerSlots * 99);
    EXPECT_LE(set.prefix_percent, set.sum_percent);
    const int n = me.Collect(INT64_MIN, INT64_MAX, INT64_MIN, out.data(), 64);
    ASSERT_LE(n, 64);
    for (int i = 0; i < n; ++i) {
      EXPECT_LT(out[i].start, out[i].end);
      EXPECT_LE(static_cast<uint64_t>(out[i].end) - static_cast<uint64_t>(out[i].start),
                static_cast<uint64_t>(kPeerMaxSpanNs));
      EXPECT_GE(out[i].owner, 0);
      EXPECT_LT(out[i].owner, kPeerSlots);
    }
    const TimeSpan mine[] = {{now, now + 1000}};
    me.Publish(mine, 1);
  }
  close(fd);
}

}  // namespace
}  // namespace vgpu::sm
