#include "budget.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace vgpu::sm {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(Budget, CostIsGpuTimeOverTheShare) {
  EXPECT_EQ(CostWallNs(30 * kMs, 30), 100 * kMs);
  EXPECT_EQ(CostWallNs(50 * kMs, 50), 100 * kMs);
  EXPECT_EQ(CostWallNs(0, 30), 0);
  EXPECT_EQ(CostWallNs(-5, 30), 0);
  EXPECT_EQ(CostWallNs(10, 0), 0);
}

TEST(Budget, UnusedBudgetOlderThanTheBurstIsForgotten) {
  // Paid off long ago: at most `burst` of saved-up budget counts.
  EXPECT_EQ(TatAfterCharge(0, 1000 * kMs, 100 * kMs, 10 * kMs), 910 * kMs);
  // In debt: the charge adds up.
  EXPECT_EQ(TatAfterCharge(1200 * kMs, 1000 * kMs, 100 * kMs, 10 * kMs), 1210 * kMs);
  // No burst: every charge starts from now.
  EXPECT_EQ(TatAfterCharge(500 * kMs, 1000 * kMs, 0, 10 * kMs), 1010 * kMs);
}

TEST(Budget, ConcurrentChargesAllCount) {
  int64_t tat = 1'000'000'000'000;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&tat] {
      for (int k = 0; k < 10000; ++k) ChargeShared(&tat, 0, 0, 3);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(tat, 1'000'000'000'000 + 4 * 10000 * 3);
}

TEST(Rhythm, Table) {
  struct Case {
    RhythmInput in;
    int64_t credit;
    int64_t burst;
    bool pause;  // counted as one of the alone rhythm's pauses (the `pauses` statistic)
  } const cases[] = {
      {{30, 100, false, false, false}, 2 * kMs, 100 * kMs, false},  // shared: short stretches
      {{30, 100, true, false, false}, 2 * kMs, 100 * kMs, false},   // alone, not saturating: short
      // Saturating beside others: short.
      {{30, 100, false, true, false}, 2 * kMs, 100 * kMs, false},
      // Alone and saturating: pauses of pause_ms whatever the limit (the stretch follows).
      {{30, 100, true, true, false}, 100 * kMs, 100 * kMs, true},  // 43 ms of work, 100 ms of pause
      {{50, 100, true, true, false}, 100 * kMs, 100 * kMs, true},
      {{70, 100, true, true, false}, 100 * kMs, 100 * kMs, true},  // 233 ms of work
      {{50, 1000, true, true, false}, 1000 * kMs, 1000 * kMs, true},
      {{50, 5000, true, true, false}, 1000 * kMs, 1000 * kMs, true},  // pauses of at most 1 s
      {{50, 1, true, true, false}, 2 * kMs, 100 * kMs, false},  // never below the short rhythm
      {{30, 100, true, true, true}, 0, 0, false},  // behind a high-priority tenant: no burst
      {{0, 100, true, true, false}, 2 * kMs, 100 * kMs, false},
      {{30, 0, true, true, false}, 2 * kMs, 100 * kMs, false},  // long stretches turned off
  };
  for (const Case& c : cases) {
    const Rhythm r = RhythmFor(c.in);
    EXPECT_EQ(r.resume_credit_ns, c.credit) << c.in.percent << " " << c.in.alone << c.in.saturating;
    EXPECT_EQ(r.burst_ns, c.burst) << c.in.percent << " " << c.in.alone << c.in.saturating;
    EXPECT_EQ(IsPause(r), c.pause) << c.in.percent << " " << c.in.alone << c.in.saturating;
  }
}

TEST(Rhythm, ResumeWaitsForTheCreditTheBurstCanKeep) {
  EXPECT_EQ(ResumeAtNs(100, Rhythm{2 * kMs, 100 * kMs}), 100 + 2 * kMs);
  EXPECT_EQ(ResumeAtNs(100, Rhythm{0, 0}), 100);
  EXPECT_EQ(ResumeAtNs(100, Rhythm{50 * kMs, 10 * kMs}), 100);
}

}  // namespace
}  // namespace vgpu::sm
