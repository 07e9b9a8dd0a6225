#include "attribution.h"

#include <gtest/gtest.h>

#include <vector>

namespace vgpu::sm {
namespace {

struct Case {
  const char* name;
  std::vector<TimeSpan> mine;
  std::vector<OwnedSpan> others;
  int64_t from;
  int64_t to;
  int64_t busy;
  int64_t ours;
  int64_t shared;
};

Attribution Split(const std::vector<TimeSpan>& mine, const std::vector<OwnedSpan>& others,
                  int64_t from, int64_t to) {
  std::vector<SpanEdge> scratch(2 * (mine.size() + others.size()) + 2);
  return Attribute(mine.data(), static_cast<int>(mine.size()), others.data(),
                   static_cast<int>(others.size()), from, to, scratch.data(),
                   static_cast<int>(scratch.size()));
}

TEST(Attribution, Table) {
  const Case cases[] = {
      {"alone: the union of our spans", {{0, 10}, {20, 30}}, {}, 0, 100, 20, 20, 0},
      {"our overlapping streams count once", {{0, 10}, {5, 15}}, {}, 0, 100, 15, 15, 0},
      {"our kernel inside another's stretched one is ours",
       {{20, 30}},
       {{0, 100, 0}},
       0,
       100,
       10,
       10,
       10},
      {"another's kernel inside our stretched one is theirs",
       {{0, 100}},
       {{20, 30, 0}},
       0,
       100,
       100,
       90,
       10},
      {"equal spans share", {{0, 100}}, {{0, 100, 0}}, 0, 100, 100, 50, 100},
      {"within 1/16 is a tie", {{0, 100}}, {{0, 105, 0}}, 0, 100, 100, 50, 100},
      {"beyond 1/16 the shorter wins", {{0, 100}}, {{0, 120, 3}}, 0, 200, 100, 100, 100},
      {"three equal tenants", {{0, 120}}, {{0, 120, 0}, {0, 120, 1}}, 0, 120, 120, 40, 120},
      {"spans that only touch do not overlap", {{0, 10}}, {{10, 20, 0}}, 0, 100, 10, 10, 0},
      {"clipped to the window", {{0, 100}}, {}, 40, 60, 20, 20, 0},
      {"others outside our spans do not matter", {{0, 10}}, {{50, 60, 0}}, 0, 100, 10, 10, 0},
      {"two others' islands in our stretched kernel",
       {{0, 1000}},
       {{100, 200, 0}, {500, 550, 1}},
       0,
       1000,
       1000,
       850,
       150},
      {"duration is the whole span's, not the clipped part",
       {{-1000, 10}},
       {{0, 20, 0}},
       0,
       100,
       10,
       0,
       10},
  };
  for (const Case& c : cases) {
    const Attribution a = Split(c.mine, c.others, c.from, c.to);
    EXPECT_EQ(a.busy_ns, c.busy) << c.name;
    EXPECT_EQ(a.ours_ns, c.ours) << c.name;
    EXPECT_EQ(a.shared_ns, c.shared) << c.name;
  }
}

TEST(Attribution, NothingOfOursIsNothing) {
  const Attribution a = Split({}, {{0, 10, 0}}, 0, 100);
  EXPECT_EQ(a.busy_ns, 0);
  EXPECT_EQ(a.ours_ns, 0);
}

TEST(Attribution, ScratchTooSmallIgnoresTheRest) {
  std::vector<TimeSpan> mine = {{0, 10}, {20, 30}};
  std::vector<SpanEdge> scratch(2);
  const Attribution a = Attribute(mine.data(), 2, nullptr, 0, 0, 100, scratch.data(), 2);
  EXPECT_EQ(a.busy_ns, 10);
}

// A time-sliced GPU (slices of 2 ms, like an H100 without MPS): tenant A runs 1.5 ms kernels
// back to back and is preempted at the end of every slice, tenant B has 10 µs kernels queued and
// runs 1 ms of them between A's slices. The records say who ran when only through their lengths.
TEST(Attribution, TimeSlicedTenantsGetWhatTheyRan) {
  std::vector<TimeSpan> a_records;
  std::vector<OwnedSpan> b_as_other;
  std::vector<TimeSpan> b_records;
  std::vector<OwnedSpan> a_as_other;
  int64_t t = 0;
  int64_t a_left = 1'500'000;
  int64_t a_start = -1;
  int64_t a_ran = 0;
  int64_t b_ran = 0;
  while (t < 300'000'000) {
    const int64_t slice_end = t + 2'000'000;
    while (t < slice_end) {
      if (a_start < 0) a_start = t;
      const int64_t run = a_left < slice_end - t ? a_left : slice_end - t;
      t += run;
      a_left -= run;
      a_ran += run;
      if (a_left == 0) {
        a_records.push_back({a_start, t});
        a_as_other.push_back({a_start, t, 0});
        a_start = -1;
        a_left = 1'500'000;
      }
    }
    for (int k = 0; k < 100; ++k, t += 10'000) {
      b_records.push_back({t, t + 10'000});
      b_as_other.push_back({t, t + 10'000, 1});
      b_ran += 10'000;
    }
  }
  const Attribution for_a = Split(a_records, b_as_other, 0, t);
  const Attribution for_b = Split(b_records, a_as_other, 0, t);
  // Within one kernel per slice of what each really ran.
  EXPECT_NEAR(static_cast<double>(for_a.ours_ns), static_cast<double>(a_ran), 0.01 * a_ran);
  EXPECT_EQ(for_b.ours_ns, b_ran);
  // An equal split of the shared time would give B half of what it ran.
  EXPECT_GT(for_a.shared_ns, b_ran / 2);
}

}  // namespace
}  // namespace vgpu::sm
