#include "turns.h"

#include <gtest/gtest.h>

namespace vgpu::sm {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(Turns, WindowsFollowTheSlotOrderAndTheLimits) {
  struct Case {
    TurnSet set;
    int32_t percent;
    TurnWindow want;
  };
  const Case cases[] = {
      // 30 + 70: the first member opens the period, the second follows.
      {{2, 100, 0, true}, 30, {0, 30 * kMs}},
      {{2, 100, 30, true}, 70, {30 * kMs, 70 * kMs}},
      // 20 / 30 / 50.
      {{3, 100, 20, true}, 30, {20 * kMs, 30 * kMs}},
      {{3, 100, 50, true}, 50, {50 * kMs, 50 * kMs}},
      // Limits adding up to less than 100 share the whole period; the budget caps each.
      {{2, 50, 20, true}, 30, {40 * kMs, 60 * kMs}},
      // Alone, or not a member (yet): no turns.
      {{1, 30, 0, true}, 30, {0, 0}},
      {{2, 100, 0, false}, 30, {0, 0}},
      // A view that does not add up (a member changed its limit meanwhile): no turns.
      {{2, 40, 30, true}, 30, {0, 0}},
      {{2, 100, 0, true}, 0, {0, 0}},
  };
  for (const Case& c : cases) {
    const TurnWindow w = TurnWindowFor(c.set, c.percent);
    EXPECT_EQ(w.offset_ns, c.want.offset_ns) << c.set.members << " " << c.set.prefix_percent;
    EXPECT_EQ(w.length_ns, c.want.length_ns) << c.set.members << " " << c.set.prefix_percent;
  }
}

TEST(Turns, ALaunchGoesInsideItsWindowAndWaitsForTheNextOneOutside) {
  const TurnWindow w{30 * kMs, 70 * kMs};          // [30, 100) of every 100 ms
  const int64_t base = 1'000'000 * kTurnPeriodNs;  // a multiple of the period
  EXPECT_EQ(TurnStartAtNs(base + 30 * kMs, w), base + 30 * kMs);
  EXPECT_EQ(TurnStartAtNs(base + 99 * kMs, w), base + 99 * kMs);
  EXPECT_EQ(TurnStartAtNs(base + 100 * kMs, w), base + 130 * kMs);
  EXPECT_EQ(TurnStartAtNs(base + 5 * kMs, w), base + 30 * kMs);
  EXPECT_EQ(TurnStartAtNs(base + 29 * kMs, w), base + 30 * kMs);
  // No turns: at once.
  EXPECT_EQ(TurnStartAtNs(base + 5 * kMs, TurnWindow{0, 0}), base + 5 * kMs);
  // Windows of the members of one set never overlap and cover the period.
  const TurnWindow a = TurnWindowFor({2, 100, 0, true}, 30);
  const TurnWindow b = TurnWindowFor({2, 100, 30, true}, 70);
  for (int64_t t = base; t < base + 2 * kTurnPeriodNs; t += kMs) {
    const bool in_a = TurnStartAtNs(t, a) == t;
    const bool in_b = TurnStartAtNs(t, b) == t;
    EXPECT_NE(in_a, in_b) << (t - base) / kMs;
  }
}

TEST(Turns, TheWindowTravelsInOneWord) {
  const TurnWindow w{30 * kMs, 70 * kMs};
  const TurnWindow back = UnpackTurn(PackTurn(w));
  EXPECT_EQ(back.offset_ns, w.offset_ns);
  EXPECT_EQ(back.length_ns, w.length_ns);
  EXPECT_EQ(PackTurn(TurnWindow{0, 0}), 0);
  EXPECT_EQ(UnpackTurn(0).length_ns, 0);
}

TEST(Turns, GpuBoundWithHysteresis) {
  constexpr double kRun = 500e6;
  EXPECT_FALSE(GpuBound(false, 0.7 * kRun, kRun));
  EXPECT_TRUE(GpuBound(false, 0.8 * kRun, kRun));
  EXPECT_TRUE(GpuBound(true, 0.65 * kRun, kRun));
  EXPECT_FALSE(GpuBound(true, 0.5 * kRun, kRun));
  // Too little running time to tell.
  EXPECT_FALSE(GpuBound(true, 10e6, 10e6));
}

}  // namespace
}  // namespace vgpu::sm
