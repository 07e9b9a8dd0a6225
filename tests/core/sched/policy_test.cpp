#include "core/sched/policy.h"

#include <gtest/gtest.h>

namespace vgpu::sched {
namespace {

TEST(Policy, NodePolicyWords) {
  struct Case {
    const char* text;
    bool ok;
    NodePolicy want;
  };
  const Case cases[] = {{"binpack", true, NodePolicy::kBinpack},
                        {"Spread", true, NodePolicy::kSpread},
                        {" spread ", true, NodePolicy::kSpread},
                        {"topology-aware", false, {}},
                        {"", false, {}},
                        {"pack", false, {}}};
  for (const Case& c : cases) {
    Result<NodePolicy> r = ParseNodePolicy(c.text);
    ASSERT_EQ(r.ok(), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(*r, c.want) << c.text;
    } else {
      EXPECT_NE(r.status().message().find("binpack or spread"), std::string::npos);
    }
  }
}

TEST(Policy, GpuPolicyWords) {
  struct Case {
    const char* text;
    bool ok;
    GpuPolicy want;
  };
  const Case cases[] = {{"binpack", true, GpuPolicy::kBinpack},
                        {"spread", true, GpuPolicy::kSpread},
                        {"TOPOLOGY-AWARE", true, GpuPolicy::kTopologyAware},
                        {"topology", false, {}},
                        {"random", false, {}}};
  for (const Case& c : cases) {
    Result<GpuPolicy> r = ParseGpuPolicy(c.text);
    ASSERT_EQ(r.ok(), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(*r, c.want) << c.text;
    }
  }
}

TEST(Policy, ScoringWeights) {
  struct Case {
    const char* text;
    bool ok;
    ScoringWeights want;
  };
  const Case cases[] = {
      {"slot=2,core=3,memory=4", true, {2, 3, 4}},
      {"memory=10", true, {1, 1, 10}},
      {" core = 0 , slot=5", true, {5, 0, 1}},
      {"", true, {1, 1, 1}},
      {"slot=x", false, {}},
      {"slot", false, {}},
      {"gpu=3", false, {}},
      {"slot=-1", false, {}},
      {"slot=101", false, {}},
  };
  for (const Case& c : cases) {
    Result<ScoringWeights> r = ParseScoringWeights(c.text);
    ASSERT_EQ(r.ok(), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(*r, c.want) << c.text;
    }
  }
}

}  // namespace
}  // namespace vgpu::sched
