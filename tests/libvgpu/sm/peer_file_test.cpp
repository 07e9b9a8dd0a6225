#include "peer_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
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
  ASSERT_EQ(stat((dir + "/vgpu-gpu-00ff").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
}

TEST(PeerFile, SaysWhyWhenTheDirectoryCannotBeMade) {
  const std::string file = TempDir() + "/plain";
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
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
    for (int i = 0; i < 5000; ++i) spans.push_back({i * 1000, i * 1000 + 500});  // wraps the ring
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

}  // namespace
}  // namespace vgpu::sm
