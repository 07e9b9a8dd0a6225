#include "core/monitor/tick_plan.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/monitor/snapshot.h"

namespace vgpu::monitor {
namespace {

using std::chrono::seconds;

// A region's slots as a table: index -> owner; every other slot is free. Counts the reads.
struct Slots {
  std::map<int, SlotIdentity> owners;
  mutable int reads = 0;
  SlotIdentity operator()(int i) const {
    ++reads;
    auto it = owners.find(i);
    return it != owners.end() ? it->second : SlotIdentity{};
  }
};

TEST(FollowKnownSlots, RereadsKnownSlotsAndFindsNewOnesAtTheLowestFree) {
  struct Case {
    const char* name;
    std::vector<SeenSlot> known;
    std::map<int, SlotIdentity> now;
    std::optional<std::vector<SeenSlot>> want;
    int reads;  // slots read
  };
  // Free runs of 2 slots end the walk.
  const Case cases[] = {
      {"empty region: two reads", {}, {}, std::vector<SeenSlot>{}, 2},
      {"unchanged",
       {{0, {10, 5}}, {1, {11, 6}}},
       {{0, {10, 5}}, {1, {11, 6}}},
       std::vector<SeenSlot>{{0, {10, 5}}, {1, {11, 6}}},
       4},
      {"a new process takes the lowest free slot",
       {{0, {10, 5}}},
       {{0, {10, 5}}, {1, {12, 7}}},
       std::vector<SeenSlot>{{0, {10, 5}}, {1, {12, 7}}},
       4},
      {"new ones in a hole and above",
       {{0, {10, 5}}, {2, {11, 6}}},
       {{0, {10, 5}}, {1, {12, 7}}, {2, {11, 6}}, {3, {13, 8}}},
       std::vector<SeenSlot>{{0, {10, 5}}, {1, {12, 7}}, {2, {11, 6}}, {3, {13, 8}}},
       6},
      {"above a slot freed since (a process that came and went)",
       {{0, {10, 5}}},
       {{0, {10, 5}}, {2, {12, 7}}},
       std::vector<SeenSlot>{{0, {10, 5}}, {2, {12, 7}}},
       5},
      {"a slot being claimed is followed, then gets its start time",
       {{0, {10, 0}}},
       {{0, {10, 5}}},
       std::vector<SeenSlot>{{0, {10, 5}}},
       3},
      {"a claim beyond the free run is not looked for",
       {{0, {10, 5}}},
       {{0, {10, 5}}, {5, {12, 7}}},
       std::vector<SeenSlot>{{0, {10, 5}}},
       3},
      {"a known slot freed: sweep", {{0, {10, 5}}, {1, {11, 6}}}, {{1, {11, 6}}}, std::nullopt, 1},
      {"a known slot taken by another pid: sweep", {{0, {10, 5}}}, {{0, {12, 7}}}, std::nullopt, 1},
      {"same pid, other start time (pid reused): sweep",
       {{0, {10, 5}}},
       {{0, {10, 9}}},
       std::nullopt,
       1},
      {"a known index out of range: sweep", {{1024, {10, 5}}}, {}, std::nullopt, 0},
  };
  for (const Case& c : cases) {
    Slots slots{c.now};
    const auto got = FollowKnownSlots(c.known, 1024, 2, [&](int i) { return slots(i); });
    EXPECT_EQ(got, c.want) << c.name;
    EXPECT_EQ(slots.reads, c.reads) << c.name;
  }
}

TEST(FollowKnownSlots, AFullRegionStopsAtTheEnd) {
  std::map<int, SlotIdentity> all;
  for (int i = 0; i < 4; ++i) all[i] = {100 + i, 1};
  Slots slots{all};
  const auto got = FollowKnownSlots({}, 4, 8, [&](int i) { return slots(i); });
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), 4u);
  EXPECT_EQ(slots.reads, 4);
}

TEST(SlotsExplainTotals, EveryDeviceTotalIsTheSumOfTheSlots) {
  struct Case {
    const char* name;
    std::vector<uint64_t> totals;
    std::vector<std::vector<uint64_t>> slots;
    bool want;
  };
  const Case cases[] = {
      {"no devices", {}, {{1}}, true},
      {"idle", {0, 0}, {}, true},
      {"sums agree", {30, 5}, {{10, 5}, {20, 0}}, true},
      {"memory held by a slot not read", {30, 5}, {{10, 5}}, false},
      {"a slot read but not counted (being reaped)", {10}, {{10}, {4}}, false},
      {"a slot with fewer devices", {10, 3}, {{10}, {0, 3}}, true},
  };
  for (const Case& c : cases) EXPECT_EQ(SlotsExplainTotals(c.totals, c.slots), c.want) << c.name;
}

TEST(PlanOwnerLookup, CachedMatchesAreRecheckedGoneStaysGone) {
  const SlotMatch matched{SlotState::kMatched, 4242};
  const SlotMatch gone{SlotState::kGone, 0};
  const SlotMatch unverified{SlotState::kUnverified, 0};
  struct Case {
    const char* name;
    const SlotMatch* cached;
    bool refresh;
    OwnerStep want;
  };
  const Case cases[] = {
      {"never seen", nullptr, false, OwnerStep::kScan},
      {"matched before", &matched, false, OwnerStep::kRecheck},
      {"gone before", &gone, false, OwnerStep::kGone},
      {"unverified before: look again", &unverified, false, OwnerStep::kScan},
      {"refresh: matched", &matched, true, OwnerStep::kScan},
      {"refresh: gone", &gone, true, OwnerStep::kScan},
  };
  for (const Case& c : cases) EXPECT_EQ(PlanOwnerLookup(c.cached, c.refresh), c.want) << c.name;
}

TEST(RecheckOwner, TheSameStartTimeKeepsTheMatch) {
  const SlotMatch matched{SlotState::kMatched, 4242};
  const SlotMatch gone{SlotState::kGone, 0};
  struct Case {
    const char* name;
    SlotMatch cached;
    std::optional<HostStat> now;
    bool readable;
    std::optional<SlotMatch> want;
  };
  const Case cases[] = {
      {"alive", matched, HostStat{'S', 77}, true, matched},
      {"exited", matched, std::nullopt, true, gone},
      {"zombie", matched, HostStat{'Z', 77}, true, gone},
      {"dead", matched, HostStat{'X', 77}, true, gone},
      {"pid reused", matched, HostStat{'R', 78}, true, gone},
      {"cannot tell: scan", matched, std::nullopt, false, std::nullopt},
      {"not a match: scan", gone, HostStat{'S', 77}, true, std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RecheckOwner(c.cached, 77, c.now, c.readable), c.want) << c.name;
  }
}

TEST(ShouldRelistDirectory, OnlyWhenTheStampChangedOrIsTooRecent) {
  constexpr int64_t kS = 1'000'000'000;
  const DirStamp stamp{1, 100, 50 * kS};
  struct Case {
    const char* name;
    std::optional<DirStamp> listed;
    int64_t listed_at_ns;
    DirStamp now;
    bool want;
  };
  const Case cases[] = {
      {"never listed", std::nullopt, 0, stamp, true},
      {"unchanged, listed well after the change", stamp, 60 * kS, stamp, false},
      {"unchanged, listed exactly a margin after", stamp, 51 * kS, stamp, false},
      {"unchanged, listed in the same second as the change", stamp, 50 * kS + 1000, stamp, true},
      {"modified", stamp, 60 * kS, DirStamp{1, 100, 61 * kS}, true},
      {"time set back (touch -d)", stamp, 60 * kS, DirStamp{1, 100, 10 * kS}, true},
      {"replaced by another directory", stamp, 60 * kS, DirStamp{1, 101, 50 * kS}, true},
      {"another file system", stamp, 60 * kS, DirStamp{2, 100, 50 * kS}, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ShouldRelistDirectory(c.listed, c.listed_at_ns, c.now, seconds(1)), c.want) << c.name;
  }
}

TEST(TickDurations, CumulativeBucketsSumAndCount) {
  TickDurations t;
  t.Observe(0.0001);
  t.Observe(0.003);
  t.Observe(-1);  // a clock step: counted as 0
  t.Observe(100);
  EXPECT_EQ(t.count, 4u);
  EXPECT_DOUBLE_EQ(t.sum_seconds, 100.0031);
  EXPECT_EQ(t.cumulative[0], 2u);      // <= 0.5 ms
  EXPECT_EQ(t.cumulative[2], 2u);      // <= 2.5 ms
  EXPECT_EQ(t.cumulative[3], 3u);      // <= 5 ms
  EXPECT_EQ(t.cumulative.back(), 3u);  // <= 2.5 s; the +Inf bucket is the count
}

}  // namespace
}  // namespace vgpu::monitor
