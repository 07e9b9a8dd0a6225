// The JSON the scheduler's handlers may hold decoded at once (scheduler/decode_budget.h).

#include "scheduler/decode_budget.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace vgpu::scheduler {
namespace {

using std::chrono::milliseconds;

DecodeBudgetOptions Small() {
  DecodeBudgetOptions o;
  o.capacity = 1000;
  o.small = 100;
  o.kept_for_small = 300;
  o.wait = milliseconds(200);
  return o;
}

TEST(DecodeBudget, LeasesGiveTheirValuesBack) {
  DecodeBudget budget(Small());
  {
    DecodeBudget::Lease a, b;
    ASSERT_TRUE(budget.Take(50, a));
    ASSERT_TRUE(budget.Take(400, b));
    EXPECT_EQ(budget.in_use(), 450u);
    DecodeBudget::Lease moved = std::move(b);
    EXPECT_EQ(moved.values(), 400u);
    EXPECT_EQ(budget.in_use(), 450u);
  }
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_EQ(budget.peak(), 450u);
}

// Large documents share capacity - kept_for_small, and one that finds no room is refused at once.
TEST(DecodeBudget, LargeDocumentsGoOneAtATimeAndNeverWait) {
  DecodeBudget budget(Small());
  DecodeBudget::Lease first, second;
  ASSERT_TRUE(budget.Take(600, first));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(budget.Take(200, second));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(100));
  // Larger than the share: capped at it, so granted alone.
  first = DecodeBudget::Lease();
  ASSERT_TRUE(budget.Take(1'000'000, second));
  EXPECT_EQ(second.values(), 700u);
}

// However many large documents are held, ordinary ones are served from what is kept for them.
TEST(DecodeBudget, SmallDocumentsAlwaysFindTheRoomKeptForThem) {
  DecodeBudget budget(Small());
  DecodeBudget::Lease large;
  ASSERT_TRUE(budget.Take(700, large));
  DecodeBudget::Lease small[3];
  for (auto& lease : small) ASSERT_TRUE(budget.Take(100, lease));
  EXPECT_EQ(budget.in_use(), 1000u);
  EXPECT_LE(budget.peak(), 1000u);
}

// A small document waits for room, and gets it when a lease goes.
TEST(DecodeBudget, ASmallDocumentWaitsForRoom) {
  DecodeBudget budget(Small());
  DecodeBudget::Lease large, s1, s2, s3;
  ASSERT_TRUE(budget.Take(700, large));
  ASSERT_TRUE(budget.Take(100, s1));
  ASSERT_TRUE(budget.Take(100, s2));
  ASSERT_TRUE(budget.Take(100, s3));
  DecodeBudget::Lease late;
  EXPECT_FALSE(budget.Take(100, late));  // full for the whole wait
  std::thread giver([&] {
    std::this_thread::sleep_for(milliseconds(50));
    s1 = DecodeBudget::Lease();
  });
  EXPECT_TRUE(budget.Take(100, late));
  giver.join();
}

// Options that keep more for small documents than leaves room for a large one keep nothing.
TEST(DecodeBudget, OptionsThatLeaveLargeDocumentsNoRoomKeepNothingAside) {
  DecodeBudgetOptions o = Small();
  o.kept_for_small = 950;
  DecodeBudget budget(o);
  DecodeBudget::Lease lease;
  ASSERT_TRUE(budget.Take(800, lease));
  EXPECT_EQ(lease.values(), 800u);
}

}  // namespace
}  // namespace vgpu::scheduler
