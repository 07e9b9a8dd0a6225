#include "sm/peer_table.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace vgpu::sm {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1000 * kMs;

// Another tenant in its own process (fcntl slot locks are per process), driven step by step
// through a pipe: each command byte runs one action and answers one result byte.
class Peer {
 public:
  enum : char { kAcquireAt2s = 'a', kHoldForever = 'h', kQuit = 'q' };

  Peer(const std::string& dir, int32_t priority) {
    int to_child[2];
    int to_parent[2];
    EXPECT_EQ(pipe(to_child), 0);
    EXPECT_EQ(pipe(to_parent), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(to_child[1]);
      close(to_parent[0]);
      PeerTable table;
      char ok = table.Open(dir.c_str(), "gpu0", priority) ? 1 : 0;
      (void)!write(to_parent[1], &ok, 1);
      char cmd = 0;
      while (read(to_child[0], &cmd, 1) == 1) {
        char result = 0;
        if (cmd == kAcquireAt2s)
          result = table.TryAcquire(2 * kSecond, 2 * kSecond + 50 * kMs) ? 1 : 0;
        if (cmd == kHoldForever) result = table.TryAcquire(kSecond, 1000 * kSecond) ? 1 : 0;
        if (cmd == kQuit) _exit(0);
        (void)!write(to_parent[1], &result, 1);
      }
      _exit(0);
    }
    close(to_child[0]);
    close(to_parent[1]);
    out_ = to_child[1];
    in_ = to_parent[0];
    char ok = 0;
    EXPECT_EQ(read(in_, &ok, 1), 1);
    EXPECT_EQ(ok, 1);
  }
  ~Peer() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    close(out_);
    close(in_);
  }
  bool Do(char cmd) {
    EXPECT_EQ(write(out_, &cmd, 1), 1);
    char result = 0;
    EXPECT_EQ(read(in_, &result, 1), 1);
    return result == 1;
  }
  void Kill() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int in_ = -1;
};

class PeerTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-sm-peers-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  std::string dir_;
};

TEST_F(PeerTableTest, AloneTheLeaseIsAlwaysGranted) {
  PeerTable table;
  ASSERT_TRUE(table.Open(dir_.c_str(), "gpu0", 1));
  EXPECT_TRUE(table.TryAcquire(kSecond, kSecond + 10 * kMs));
  EXPECT_TRUE(table.Holding());
  EXPECT_FALSE(table.ShouldYield(kSecond + 100 * kMs));  // nobody waits: keep going
  table.Release(kSecond + 100 * kMs, kSecond + 100 * kMs);
  EXPECT_EQ(table.Holder(), -1);
}

TEST_F(PeerTableTest, HeldLeaseMakesOthersWaitUntilItEnds) {
  Peer holder(dir_, 1);
  ASSERT_TRUE(holder.Do(Peer::kHoldForever));  // lease until 1000 s
  PeerTable table;
  ASSERT_TRUE(table.Open(dir_.c_str(), "gpu0", 1));
  EXPECT_FALSE(table.TryAcquire(2 * kSecond, 3 * kSecond));
  EXPECT_TRUE(table.TryAcquire(1001 * kSecond, 1002 * kSecond));  // the lease ran out
  EXPECT_TRUE(table.Holding());
}

TEST_F(PeerTableTest, SigkilledHolderBlocksNobodyPastItsLease) {
  PeerTable table;
  ASSERT_TRUE(table.Open(dir_.c_str(), "gpu0", 1));
  Peer holder(dir_, 1);
  ASSERT_TRUE(holder.Do(Peer::kAcquireAt2s));  // lease until 2.05 s
  holder.Kill();
  EXPECT_FALSE(table.TryAcquire(2 * kSecond + 10 * kMs, 3 * kSecond));
  EXPECT_TRUE(table.TryAcquire(2 * kSecond + 60 * kMs, 3 * kSecond));
}

TEST_F(PeerTableTest, HolderYieldsAfterItsQuantumAndHandsTheLeaseToTheWaiter) {
  PeerTable table;
  ASSERT_TRUE(table.Open(dir_.c_str(), "gpu0", 1));
  ASSERT_TRUE(table.TryAcquire(2 * kSecond - 30 * kMs, 2 * kSecond + kSecond));
  Peer waiter(dir_, 1);
  EXPECT_FALSE(waiter.Do(Peer::kAcquireAt2s));              // registers as waiting
  EXPECT_FALSE(table.ShouldYield(2 * kSecond - 20 * kMs));  // 10 ms into a 100 ms quantum
  EXPECT_TRUE(table.ShouldYield(2 * kSecond + 80 * kMs));   // 110 ms
  table.Release(2 * kSecond, 2 * kSecond);
  EXPECT_FALSE(table.Holding());
  EXPECT_TRUE(waiter.Do(Peer::kAcquireAt2s));  // handed over, not grabbed by whoever is first
}

TEST_F(PeerTableTest, HighPriorityWaiterGoesFirstAndCutsALowPriorityQuantum) {
  PeerTable table;
  ASSERT_TRUE(table.Open(dir_.c_str(), "gpu0", 1));
  ASSERT_TRUE(table.TryAcquire(2 * kSecond - 6 * kMs, 3 * kSecond));
  Peer low(dir_, 1);
  Peer high(dir_, 0);
  EXPECT_FALSE(low.Do(Peer::kAcquireAt2s));
  EXPECT_FALSE(high.Do(Peer::kAcquireAt2s));
  EXPECT_TRUE(table.HighPriorityWaiting());
  EXPECT_TRUE(table.ShouldYield(2 * kSecond));  // 6 ms: past the 5 ms low-priority quantum
  table.Release(2 * kSecond, 2 * kSecond);
  EXPECT_FALSE(low.Do(Peer::kAcquireAt2s));
  EXPECT_TRUE(high.Do(Peer::kAcquireAt2s));
}

TEST_F(PeerTableTest, UnusableDirectoryMeansNoLease) {
  PeerTable table;
  EXPECT_FALSE(table.Open("/nonexistent/dir", "gpu0", 1));
  EXPECT_FALSE(table.is_open());
  EXPECT_TRUE(table.TryAcquire(kSecond, kSecond));
  EXPECT_TRUE(table.Holding());
}

}  // namespace
}  // namespace vgpu::sm
