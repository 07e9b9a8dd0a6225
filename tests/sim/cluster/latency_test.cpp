#include "sim/cluster/latency.h"

#include <gtest/gtest.h>

namespace vgpu::sim {
namespace {

TEST(Latency, NearestRankPercentiles) {
  LatencyRecorder r;
  EXPECT_EQ(r.Percentile(50), 0);
  for (int i = 100; i >= 1; --i) r.Add(i);  // unsorted input
  EXPECT_EQ(r.count(), 100u);
  const struct {
    double p;
    double want;
  } cases[] = {{0, 1}, {1, 1}, {50, 50}, {99, 99}, {99.5, 100}, {100, 100}, {150, 100}};
  for (const auto& c : cases) EXPECT_EQ(r.Percentile(c.p), c.want) << c.p;
  EXPECT_DOUBLE_EQ(r.Mean(), 50.5);
  EXPECT_EQ(r.Max(), 100);
}

}  // namespace
}  // namespace vgpu::sim
