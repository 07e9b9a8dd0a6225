#include "deviceplugin/health.h"

#include <gtest/gtest.h>

namespace vgpu::deviceplugin {
namespace {

using namespace std::chrono_literals;
using TP = HealthTracker::Clock::time_point;

TEST(ParseXidList, Table) {
  EXPECT_EQ(*ParseXidList(""), (std::set<uint64_t>{}));
  EXPECT_EQ(*ParseXidList("13, 31,43"), (std::set<uint64_t>{13, 31, 43}));
  EXPECT_EQ(*ParseXidList("79,"), (std::set<uint64_t>{79}));
  auto bad = ParseXidList("13,x1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x1"), std::string::npos);
  EXPECT_FALSE(ParseXidList("-3").ok());
}

TEST(HealthTracker, IgnoredXidsKeepTheGpuHealthy) {
  HealthTracker h(DefaultIgnoredXids(), 60s);
  for (uint64_t xid : {13, 31, 43, 45, 68, 109}) EXPECT_FALSE(h.OnXid("GPU-a", xid, TP{}));
  EXPECT_TRUE(h.Unhealthy().empty());
}

TEST(HealthTracker, CriticalXidThenRecoveryAfterQuietPeriod) {
  HealthTracker h(DefaultIgnoredXids(), 60s);
  const TP t0{};
  EXPECT_TRUE(h.OnXid("GPU-a", 79, t0));   // fell off the bus
  EXPECT_FALSE(h.OnXid("GPU-a", 79, t0));  // already unhealthy: no change
  EXPECT_TRUE(h.Unhealthy().contains("GPU-a"));
  EXPECT_FALSE(h.OnProbe("GPU-a", true, t0 + 30s));   // answers, but too soon
  EXPECT_FALSE(h.OnProbe("GPU-a", false, t0 + 90s));  // does not answer: stays unhealthy
  EXPECT_FALSE(h.OnProbe("GPU-a", true, t0 + 120s));  // quiet restarted at 90s
  EXPECT_TRUE(h.OnProbe("GPU-a", true, t0 + 151s));   // recovered
  EXPECT_TRUE(h.Unhealthy().empty());
  EXPECT_FALSE(h.OnProbe("GPU-a", true, t0 + 152s));  // healthy stays healthy
}

TEST(HealthTracker, UnresponsiveGpuBecomesUnhealthyWithoutXid) {
  HealthTracker h({}, 0s);
  EXPECT_TRUE(h.OnProbe("GPU-b", false, TP{}));
  EXPECT_TRUE(h.Unhealthy().contains("GPU-b"));
  EXPECT_TRUE(h.OnProbe("GPU-b", true, TP{} + 1s));
}

TEST(HealthTracker, CustomIgnoredList) {
  HealthTracker h({79}, 60s);
  EXPECT_FALSE(h.OnXid("GPU-a", 79, TP{}));
  EXPECT_TRUE(h.OnXid("GPU-a", 13, TP{}));  // 13 is not ignored any more
}

}  // namespace
}  // namespace vgpu::deviceplugin
