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

TEST(Calibration, AWindowSetsTheScaleRecordsModeMovesItHalfwayUnlessItUndercharged) {
  struct Case {
    double had;
    bool has_scale;
    double found;
    bool window;
    double want;
  };
  const Case cases[] = {
      {1.00, false, 0.30, false, 0.30},  // the first period sets it
      {0.05, true, 0.40, true, 0.40},    // a scale from a setup stretch: undercharged 8x, replaced
      {0.05, true, 0.40, false, 0.40},   // (by records mode too)
      {200e3, true, 40e3, true, 40e3},   // a setup's time per launch: a window replaces it
      {0.40, true, 0.45, true, 0.45},
      // Records mode: within the margin, or lower, halfway (its periods' noise averages out).
      {0.40, true, 0.48, false, 0.44},
      {0.40, true, 0.40, false, 0.40},
      {0.40, true, 0.20, false, 0.30},
      {0.40, true, 0.02, false, 0.21},
      {0.40, true, 0.52, false, 0.52},  // undercharged by more than a quarter: at once
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(NextScale(c.had, c.has_scale, c.found, c.window), c.want)
        << c.had << (c.has_scale ? "" : " (none)") << " -> " << c.found
        << (c.window ? " (window)" : "");
  }
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
      {2 * kMs, 5 * kMs, 20, true},
      {60 * kMs, 240 * kMs, 5000, true},
      {kMs / 2, 55 * kMs, 300, false},  // a setup stretch: a sliver of kernels in its events
      {2 * kMs, 4 * kMs, 20, false},
      {2 * kMs, 5 * kMs, 19, false},
      {0, 0, 0, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EnoughToCalibrate(c.records_ns, c.events_ns, c.launches), c.want)
        << c.records_ns << " ns of records, " << c.events_ns << " ns of events, " << c.launches
        << " launches";
  }
}

TEST(Calibration, TheSampledChargeIsTheLargerOfTheEventAndTheLaunchEstimatesOfAPeriod) {
  constexpr int64_t kMs = 1'000'000;
  // Calibrated at 15 steps/s (held by the limit): 0.25 of the events, 13 µs per launch.
  const Scales scales{0.25, 13'000.0};
  struct Pass {
    int64_t at_ms;
    int64_t event_busy_ns;
    uint64_t launched;
    int64_t want_charge;
  };
  const Pass passes[] = {
      {0, 8 * kMs, 150, 2 * kMs},  // as calibrated: both say 2 ms
      // Free at 23 steps/s: the events still cover the pass, the launches say what ran.
      // (the period's estimates: 4.0 ms by events, 4.94 by launches).
      {8, 8 * kMs, 230, 2'940'000},
      // Launches counted now, their batch's events a pass later: one charge, not two.
      {16, 0, 154, 2'002'000},
      {24, 8 * kMs, 0, 0},
      // Kernels grew longer: the events say so (14 ms by events, 6.942 by launches).
      {40, 32 * kMs, 0, 7'058'000},
      // A new period starts from nothing.
      {250, 8 * kMs, 150, 2 * kMs},
      {258, 0, 0, 0},
  };
  SampledEstimate e{0, 0.0, 0.0, 0};
  for (const Pass& p : passes) {
    EXPECT_EQ(ChargeSampled(e, p.at_ms * kMs, p.event_busy_ns, p.launched, scales), p.want_charge)
        << "at " << p.at_ms << " ms";
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
