#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

namespace vgpu::kube {
namespace {

using std::chrono::milliseconds;

class FakeClock {
 public:
  std::chrono::steady_clock::time_point now{};
  RateLimiter::Clock fn() {
    return [this] { return now; };
  }
};

TEST(RateLimiterTest, BurstThenQps) {
  FakeClock clock;
  RateLimiter limiter(/*qps=*/10, /*burst=*/5, clock.fn());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(limiter.Reserve().count(), 0) << i;
  EXPECT_EQ(limiter.throttled(), 0);
  // The sixth waits one token interval (100 ms), the seventh two.
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(limiter.Reserve()).count(), 100);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(limiter.Reserve()).count(), 200);
  EXPECT_EQ(limiter.throttled(), 2);
  // After the debt is paid and one more second passes, the bucket refills to `burst`, no more.
  clock.now += milliseconds(200) + std::chrono::seconds(10);
  int free = 0;
  while (limiter.Reserve().count() == 0) ++free;
  EXPECT_EQ(free, 5);
  EXPECT_EQ(limiter.granted(), 5 + 2 + 5 + 1);
}

TEST(RateLimiterTest, SteadyRateCounted) {
  FakeClock clock;
  RateLimiter limiter(/*qps=*/100, /*burst=*/1, clock.fn());
  // One request every 10 ms never waits; one every 5 ms waits every other time (or more).
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(limiter.Reserve().count(), 0);
    clock.now += milliseconds(10);
  }
  int waited = 0;
  for (int i = 0; i < 50; ++i) {
    if (limiter.Reserve().count() > 0) ++waited;
    clock.now += milliseconds(5);
  }
  EXPECT_GE(waited, 25);
}

TEST(RateLimiterTest, DisabledNeverWaits) {
  FakeClock clock;
  RateLimiter limiter(0, 1, clock.fn());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limiter.Reserve().count(), 0);
  EXPECT_EQ(limiter.throttled(), 0);
}

}  // namespace
}  // namespace vgpu::kube
