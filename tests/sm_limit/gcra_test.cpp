#include "sm/gcra.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

namespace vgpu::sm {
namespace {

TEST(CostWallNs, ScalesInverselyWithTheLimit) {
  struct Case {
    int64_t gpu_ns;
    int32_t percent;
    int64_t wall_ns;
  };
  const Case cases[] = {{1000, 100, 1000}, {1000, 50, 2000}, {3000, 30, 10000}, {1000, 10, 10000},
                        {0, 30, 0},        {1000, 0, 0},     {-5, 30, 0}};
  for (const Case& c : cases) EXPECT_EQ(CostWallNs(c.gpu_ns, c.percent), c.wall_ns);
}

TEST(TatAfterCharge, ForgetsBudgetOlderThanTheBurst) {
  struct Case {
    int64_t tat, now, burst, cost, want;
  };
  const Case cases[] = {
      {0, 1000, 100, 10, 910},      // long idle: only `burst` of saved budget remains
      {950, 1000, 100, 10, 960},    // recent idle: saved budget kept
      {2000, 1000, 100, 10, 2010},  // in debt: debt grows
      {0, 1000, 0, 10, 1010},       // no burst: strictly paced
  };
  for (const Case& c : cases) EXPECT_EQ(TatAfterCharge(c.tat, c.now, c.burst, c.cost), c.want);
}

TEST(WaitNs, WaitsOnlyWhileInDebt) {
  EXPECT_EQ(WaitNs(100, 50), 50);
  EXPECT_EQ(WaitNs(50, 100), 0);
  EXPECT_EQ(WaitNs(100, 100), 0);
}

TEST(ResumeAtNs, WaitsForACreditOnlyWhenTheBurstWindowKeepsIt) {
  struct Case {
    int64_t tat, burst, credit, want;
  };
  const Case cases[] = {
      {1000, 200, 50, 1050},  // throttled: go once 50 ns of budget has built up
      {1000, 50, 50, 1050},   // a window exactly the credit still keeps it
      {1000, 40, 50, 1000},   // the window would forget it: go as soon as the debt is paid
      {1000, 0, 50, 1000},    // no window (low priority beside high): strictly paced
  };
  for (const Case& c : cases) EXPECT_EQ(ResumeAtNs(c.tat, c.burst, c.credit), c.want);
  // The banked wait is not lost: the next charge starts from the old counter, not from now.
  EXPECT_EQ(TatAfterCharge(1000, ResumeAtNs(1000, 200, 50), 200, 10), 1010);
}

TEST(AloneResumeCreditNs, RunsLongStretchesWithinTheWaitBound) {
  constexpr int64_t kMs = 1'000'000;
  struct Case {
    int32_t percent;
    int64_t burst, max_wait, shared, want;
  };
  const Case cases[] = {
      {30, 300 * kMs, 700 * kMs, 20 * kMs, 700 * kMs},  // 300 ms of work, then 700 ms of waiting
      {50, 300 * kMs, 700 * kMs, 20 * kMs, 300 * kMs},
      {70, 300 * kMs, 700 * kMs, 20 * kMs, 300 * kMs / 70 * 30},
      {10, 300 * kMs, 700 * kMs, 20 * kMs, 700 * kMs},  // the wait bound shortens the stretch
      {99, 300 * kMs, 700 * kMs, 20 * kMs, 20 * kMs},   // never below the shared credit
      {30, 0, 700 * kMs, 20 * kMs, 20 * kMs},           // alone stretches switched off
      {0, 300 * kMs, 700 * kMs, 20 * kMs, 20 * kMs},    // unlimited: nothing to wait for
      {100, 300 * kMs, 700 * kMs, 20 * kMs, 20 * kMs},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(AloneResumeCreditNs(c.percent, c.burst, c.max_wait, c.shared), c.want)
        << c.percent << "% burst " << c.burst;
  }
}

// Charges from several processes on one shared counter add up exactly (no lost update).
TEST(ChargeShared, ConcurrentProcessesNeverLoseACharge) {
  void* map =
      mmap(nullptr, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* tat = static_cast<int64_t*>(map);
  *tat = 1'000'000'000;  // far in the future: the burst floor never applies
  constexpr int kProcs = 4;
  constexpr int kCharges = 20000;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < kCharges; ++i) ChargeShared(tat, 0, 0, 3);
      _exit(0);
    }
  }
  for (int p = 0; p < kProcs; ++p) {
    int status = 0;
    wait(&status);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(*tat, 1'000'000'000 + int64_t{kProcs} * kCharges * 3);
  munmap(map, sizeof(int64_t));
}

}  // namespace
}  // namespace vgpu::sm
