#include "calibration.h"

#include <gtest/gtest.h>

namespace vgpu::sm {
namespace {

constexpr int64_t kS = 1'000'000'000;

TEST(Calibration, SpacingDoublesWhileWindowsAgreeAndStartsOverOnAChange) {
  struct Case {
    int64_t spacing;
    bool agreed;
    int64_t want;
  };
  const Case cases[] = {
      {10 * kS, true, 20 * kS}, {20 * kS, true, 40 * kS},  {40 * kS, true, 60 * kS},  // capped
      {60 * kS, true, 60 * kS}, {60 * kS, false, 10 * kS}, {20 * kS, false, 10 * kS},
      {0, true, 10 * kS},  // nothing sensible yet: the shortest
      {-1, true, 10 * kS},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(NextCalibrationSpacing(c.spacing, c.agreed), c.want)
        << c.spacing / kS << " s, agreed " << c.agreed;
  }
  // From the first detached window on, steady work reaches the longest spacing in three windows.
  int64_t spacing = kCalibrateMinNs;
  int64_t waited = 0;
  for (int i = 0; i < 3; ++i) {
    waited += spacing;
    spacing = NextCalibrationSpacing(spacing, true);
  }
  EXPECT_EQ(spacing, kCalibrateMaxNs);
  EXPECT_EQ(waited, 70 * kS);
}

TEST(Calibration, ScaleAgreesWithinFifteenPercent) {
  struct Case {
    double had;
    double found;
    bool want;
  };
  const Case cases[] = {
      {0.40, 0.40, true},  {0.40, 0.46, true},  {0.40, 0.34, true},
      {0.40, 0.47, false}, {0.40, 0.33, false}, {1.00, 0.86, true},
      {0.02, 0.02, true},  {0.02, 0.05, false}, {0.0, 0.0, false},  // no scale: nothing to confirm
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ScaleAgrees(c.had, c.found), c.want) << c.had << " -> " << c.found;
  }
}

TEST(Calibration, WorkMovedOnlyWhenTheOldScaleMayBeTooSmall) {
  const WorkSignature then{0.20, 5000.0, 20000.0, 0.10};
  struct Case {
    const char* what;
    WorkSignature now;
    bool want;
  };
  const Case cases[] = {
      {"the same", then, false},
      {"a little more of everything", {0.30, 7000.0, 29000.0, 0.25}, false},
      {"less of everything", {0.05, 1000.0, 5000.0, 0.0}, false},
      {"event usage up by half", {0.36, 5000.0, 20000.0, 0.10}, true},
      {"longer per launch", {0.20, 8600.0, 20000.0, 0.10}, true},
      {"more launches", {0.20, 5000.0, 30200.0, 0.10}, true},
      {"more waiting for the GPU", {0.20, 5000.0, 20000.0, 0.31}, true},
  };
  for (const Case& c : cases) EXPECT_EQ(WorkMoved(c.now, then), c.want) << c.what;
  // An idle start (all zero) moves once the work is more than noise.
  const WorkSignature idle{0, 0, 0, 0};
  EXPECT_FALSE(WorkMoved(WorkSignature{0.04, 900.0, 90.0, 0.1}, idle));
  EXPECT_TRUE(WorkMoved(WorkSignature{0.06, 0, 0, 0}, idle));
}

}  // namespace
}  // namespace vgpu::sm
