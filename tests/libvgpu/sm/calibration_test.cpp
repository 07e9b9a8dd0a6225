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

TEST(Calibration, ScaleHoldsUnlessItUnderchargedByMoreThanAQuarter) {
  struct Case {
    double had;
    double found;
    bool want;
  };
  const Case cases[] = {
      {0.40, 0.40, true},  {0.40, 0.49, true},
      {0.40, 0.51, false},  // the events were charged a fifth less than the kernels used
      {0.40, 0.20, true},   // twice what they used: conservative
      {1.00, 0.76, true},  {0.02, 0.02, true},
      {0.02, 0.03, false}, {0.0, 0.0, false},  // no scale: nothing to confirm
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ScaleHolds(c.had, c.found), c.want) << c.had << " -> " << c.found;
  }
}

TEST(Calibration, AHigherRatioIsTakenAtOnceALowerOneHalfway) {
  struct Case {
    double had;
    bool has_scale;
    double found;
    double want;
  };
  const Case cases[] = {
      {1.00, false, 0.30, 0.30},  // the first period sets it
      {0.05, true, 0.40, 0.40},   // a scale from a setup stretch: undercharged 8x, replaced at once
      {0.40, true, 0.45, 0.45},   // a little higher: taken too (the margin only spaces windows)
      {0.40, true, 0.40, 0.40},  {0.40, true, 0.20, 0.30},  // lower: halfway, towards charging less
      {0.40, true, 0.02, 0.21},
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(NextScale(c.had, c.has_scale, c.found), c.want)
        << c.had << (c.has_scale ? "" : " (none)") << " -> " << c.found;
  }
  // A scale 20x too small is right after one window; when each window moved it halfway, steady
  // work took three windows, 10 s of launching apart, to get within a quarter of its ratio.
  EXPECT_DOUBLE_EQ(NextScale(0.02, true, 0.40), 0.40);
}

TEST(Calibration, APeriodCalibratesOnlyWithEnoughOfEachMeasure) {
  constexpr int64_t kMs = 1'000'000;
  struct Case {
    int64_t records_ns;
    int64_t events_ns;
    uint64_t launches;
    bool want;
  };
  const Case cases[] = {
      {2 * kMs, 5 * kMs, 100, true},
      {60 * kMs, 240 * kMs, 5000, true},
      {kMs / 2, 55 * kMs, 300, false},  // a setup stretch: a sliver of kernels in its events
      {2 * kMs, 4 * kMs, 100, false},
      {2 * kMs, 5 * kMs, 99, false},
      {0, 0, 0, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EnoughToCalibrate(c.records_ns, c.events_ns, c.launches), c.want)
        << c.records_ns << " ns of records, " << c.events_ns << " ns of events, " << c.launches
        << " launches";
  }
}

TEST(Calibration, TheSampledChargeIsTheLargerOfTheEventAndTheLaunchEstimates) {
  struct Case {
    int64_t event_busy_ns;
    uint64_t launched;
    Scales scales;
    int64_t want;
  };
  const Case cases[] = {
      // Calibrated at 15 steps/s (held by the limit): 0.25 of the events, 13 µs per launch.
      {8'000'000, 150, {0.25, 13'000.0}, 2'000'000},  // as calibrated: both say 2 ms
      // Free at 23 steps/s: the events still cover the pass, the launches say what ran.
      {8'000'000, 230, {0.25, 13'000.0}, 2'990'000},
      // Kernels grew longer at the same launch rate: the events say so.
      {8'000'000, 150, {0.50, 13'000.0}, 4'000'000},
      {0, 0, {0.25, 13'000.0}, 0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SampledCharge(c.event_busy_ns, c.launched, c.scales), c.want)
        << c.event_busy_ns << " ns of events, " << c.launched << " launches";
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

// Steady work seen in 8-ms passes: the signature reads its level from the first second on.
TEST(Calibration, SignatureOfSteadyWorkIsItsLevel) {
  constexpr int64_t kPass = 8'000'000;
  WorkSignature w{};
  int64_t seen = 0;
  for (int i = 0; i < 40; ++i) NoteWork(w, seen, WorkSample{kPass, kPass / 4, 1000});
  EXPECT_NEAR(w.event_usage, 0.25, 1e-9);
  EXPECT_NEAR(w.launch_rate, 125000.0, 1e-6);
  EXPECT_NEAR(w.event_per_launch, 2000.0, 1e-9);
  EXPECT_EQ(seen, 40 * kPass);
}

// A tenant that works in bursts (a service, processes taking turns): the thread sleeps between
// them, and its first pass after a burst's start spans the pause. Left out, the signature stays at
// the bursts' level, and a calibration taken at a burst's start does not make the rest of the burst
// look like a change of work.
TEST(Calibration, PassAfterASleepDoesNotCountAsWork) {
  constexpr int64_t kPass = 8'000'000;
  WorkSignature w{};
  int64_t seen = 0;
  for (int i = 0; i < 200; ++i) NoteWork(w, seen, WorkSample{kPass, kPass / 4, 1000});
  const WorkSignature steady = w;
  NoteWork(w, seen, WorkSample{2'000'000'000, kPass / 4, 1000});  // 2 s asleep, then a pass
  EXPECT_DOUBLE_EQ(w.launch_rate, steady.launch_rate);
  EXPECT_DOUBLE_EQ(w.event_usage, steady.event_usage);
  EXPECT_FALSE(WorkMoved(steady, w));
  // Had that pass counted, the launch rate would have read a third of the bursts' and the next
  // second of the same work would have looked moved.
  WorkSignature counted = steady;
  counted.launch_rate = Ewma(steady.launch_rate, 1000 * 1e9 / 2e9, 2'000'000'000, kSignatureTauNs);
  EXPECT_TRUE(WorkMoved(steady, counted));
  // Nor do the passes before the thread sleeps, which saw nothing at all.
  for (int i = 0; i < 37; ++i) NoteWork(w, seen, WorkSample{kPass, 0, 0});
  EXPECT_DOUBLE_EQ(w.launch_rate, steady.launch_rate);
  // Passes that saw the GPU busy without launches (the app waits for a long kernel) count.
  NoteWork(w, seen, WorkSample{kPass, kPass, 0});
  EXPECT_GT(w.event_usage, steady.event_usage);
  EXPECT_LT(w.launch_rate, steady.launch_rate);
  // Passes of a busy host (a late wake-up of 30 ms) still count.
  NoteWork(w, seen, WorkSample{30'000'000, 30'000'000 / 4, 3750});
  EXPECT_GT(seen, 200 * kPass);
}

}  // namespace
}  // namespace vgpu::sm
