#include "sm/launch_accounting.h"

#include <gtest/gtest.h>

namespace vgpu::sm {
namespace {

TEST(ShouldRecordEnd, Table) {
  AccountingParams p;  // quantum 1 ms
  struct Case {
    int64_t est;
    uint32_t unrecorded;
    int64_t since;
    bool want;
  };
  const Case cases[] = {
      {0, 1, 0, true},               // unknown cost: measure every launch
      {5'000'000, 1, 0, true},       // a 5 ms kernel gets its own event
      {5'000, 1, 0, false},          // a 5 us kernel does not...
      {5'000, 199, 0, false},        // ...nor 199 of them
      {5'000, 200, 0, true},         // 200 x 5 us = one quantum
      {5'000, 3, 999'999, false},    // host time short of a quantum
      {5'000, 3, 1'000'000, true},   // or a quantum of host time passed
      {5'000, 0, 1'000'000, false},  // nothing to close
  };
  for (const Case& c : cases)
    EXPECT_EQ(ShouldRecordEnd(p, c.est, c.unrecorded, c.since), c.want)
        << c.est << " " << c.unrecorded << " " << c.since;
}

TEST(QueueFull, Table) {
  AccountingParams p;  // bound 2 ms, 12 marks
  struct Case {
    uint32_t end_marks;
    uint32_t marks;
    int64_t est;
    bool shared;
    bool want;
  };
  const Case cases[] = {
      {0, 0, 100'000'000, false, false},  // an empty queue always takes one launch
      {0, 1, 100'000'000, false, false},  // (a start mark alone is no queued work)
      {1, 2, 100'000'000, false, false},  // two big batches may be queued: no bubble between
      {2, 3, 4'000'000, false, true},     // but not a third
      {2, 3, 1'000'000, false, false},    // small work: keep queueing
      {1, 2, 1'000, true, false},         // other tenants busy: two batches still fine
      {2, 3, 1'000, true, true},          // but no more, whatever their size
      {0, 1, 1'000, true, false},        {9, 10, 0, false, true},  // ring nearly full
      {8, 9, 0, false, false},
  };
  for (const Case& c : cases)
    EXPECT_EQ(QueueFull(p, c.end_marks, c.marks, c.est, c.shared), c.want)
        << c.end_marks << " " << c.marks << " " << c.est << " " << c.shared;
}

TEST(FastWindowAfterLaunch, Table) {
  AccountingParams p;  // quantum 1 ms, queue bound 2 ms, 12 marks
  // A launch-bound stream after a full launch at t = 10 ms: 10 us per launch, one launch in the
  // open batch (begun at 9.9 ms), a start mark outstanding; poll due at 10.3 ms, extension at 10.8.
  const FastWindowInput base{.now_ns = 10'000'000,
                             .est_per_launch_ns = 10'000,
                             .unrecorded = 1,
                             .first_unrecorded_ns = 9'900'000,
                             .end_marks = 0,
                             .marks = 1,
                             .outstanding_est_ns = 10'000,
                             .poll_due_ns = 10'300'000,
                             .extend_due_ns = 10'800'000};
  struct Case {
    const char* what;
    FastWindowInput in;
    uint32_t launches;
    int64_t until_ns;
  };
  auto with = [&](auto change) {
    FastWindowInput in = base;
    change(in);
    return in;
  };
  const Case cases[] = {
      {"launches until an end event falls due (99 x 10 us < 1 ms), until the poll", base, 98,
       10'300'000},
      {"unknown cost per launch: every launch records",
       with([](auto& in) { in.est_per_launch_ns = 0; }), 0, 0},
      {"a kernel as long as the quantum gets its own event",
       with([](auto& in) { in.est_per_launch_ns = 1'000'000; }), 0, 0},
      {"the batch is one launch short of its event", with([](auto& in) { in.unrecorded = 99; }), 0,
       0},
      {"an event was just recorded: a new batch", with([](auto& in) {
         in.unrecorded = 0;
         in.marks = 2;
         in.end_marks = 1;
         in.poll_due_ns = 20'000'000;
         in.extend_due_ns = 20'000'000;
       }),
       99, 11'000'000},
      {"a quantum of host time since the batch's first launch", with([](auto& in) {
         in.poll_due_ns = 20'000'000;
         in.extend_due_ns = 20'000'000;
       }),
       98, 10'900'000},
      {"the lease extension is due first", with([](auto& in) {
         in.poll_due_ns = 20'000'000;
         in.extend_due_ns = 10'050'000;
       }),
       98, 10'050'000},
      {"the poll is overdue", with([](auto& in) { in.poll_due_ns = 10'000'000; }), 0, 0},
      {"two batches queued: only the room left under the 2 ms bound", with([](auto& in) {
         in.end_marks = 2;
         in.marks = 3;
         in.outstanding_est_ns = 1'950'000;
       }),
       4, 10'300'000},
      {"two batches queued and the bound reached: the next launch waits", with([](auto& in) {
         in.end_marks = 2;
         in.marks = 3;
         in.outstanding_est_ns = 2'000'000;
       }),
       0, 0},
      {"ring nearly full: the full path polls at every launch",
       with([](auto& in) { in.marks = 9; }), 0, 0},
      {"tiny kernels: the count is capped", with([](auto& in) {
         in.est_per_launch_ns = 1;
         in.unrecorded = 0;
       }),
       65'536, 10'300'000},
  };
  for (const Case& c : cases) {
    const FastWindow w = FastWindowAfterLaunch(p, c.in);
    EXPECT_EQ(w.launches, c.launches) << c.what;
    if (c.launches > 0) {
      EXPECT_EQ(w.until_ns, c.until_ns) << c.what;
    }
  }
}

TEST(UpdateEstimate, Table) {
  EXPECT_EQ(UpdateEstimate(0, 1000, 10), 100);    // first sample taken as is
  EXPECT_EQ(UpdateEstimate(100, 2000, 10), 125);  // then a quarter step toward the sample
  EXPECT_EQ(UpdateEstimate(100, 2000, 0), 100);   // no launches: no information
  EXPECT_EQ(UpdateEstimate(0, 0, 5), 1);          // never 0 once known
}

TEST(OwnOverheadNs, CreditsTheHooksOnlyWhileTheGpuWaitedOnTheHost) {
  struct Case {
    int64_t measured;
    uint32_t launches;
    int64_t hook;
    bool waited;
    int64_t want;
  };
  const Case cases[] = {
      {1'000'000, 120, 300, true, 36'000},    // launch-bound: 120 launches x 300 ns
      {1'000'000, 120, 300, false, 0},        // work was queued: the hooks ran in its shadow
      {1'000'000, 5000, 300, true, 250'000},  // never more than a quarter of the interval
      {1'000'000, 120, 0, true, 0},           // no estimate of the hooks' cost yet
      {0, 120, 300, true, 0},                 // nothing measured
      {-5, 120, 300, true, 0},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(OwnOverheadNs(c.measured, c.launches, c.hook, c.waited), c.want)
        << c.measured << " " << c.launches << " " << c.hook << " " << c.waited;
  }
}

}  // namespace
}  // namespace vgpu::sm
