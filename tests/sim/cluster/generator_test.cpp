#include "sim/cluster/generator.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/cluster/request.h"

namespace vgpu::sim {
namespace {

TEST(Generator, SizesAndValidity) {
  GeneratorOptions o;
  o.nodes = 7;
  o.gpus_per_node = 3;
  o.pods = 500;
  const Scenario sc = GenerateScenario(o);
  ASSERT_EQ(sc.nodes.size(), 7u);
  for (const NodeSpec& n : sc.nodes) EXPECT_EQ(n.gpus.size(), 3u);
  ASSERT_EQ(sc.pods.size(), 500u);
  EXPECT_TRUE(ValidateScenario(sc).ok()) << ValidateScenario(sc).ToString();
  for (size_t i = 1; i < sc.pods.size(); ++i) {
    EXPECT_LE(sc.pods[i - 1].arrival_s, sc.pods[i].arrival_s);
  }
}

TEST(Generator, SameSeedSameScenarioOtherSeedOther) {
  GeneratorOptions o;
  o.nodes = 3;
  o.pods = 200;
  const Scenario a = GenerateScenario(o);
  const Scenario b = GenerateScenario(o);
  o.seed = 2;
  const Scenario c = GenerateScenario(o);
  int same_ab = 0;
  int same_ac = 0;
  for (size_t i = 0; i < a.pods.size(); ++i) {
    const VgpuRequest ra = EffectiveRequest(a.pods[i]);
    same_ab += ra == EffectiveRequest(b.pods[i]) && a.pods[i].duration_s == b.pods[i].duration_s;
    same_ac += ra == EffectiveRequest(c.pods[i]) && a.pods[i].duration_s == c.pods[i].duration_s;
  }
  EXPECT_EQ(same_ab, 200);
  EXPECT_LT(same_ac, 200);
}

TEST(Generator, MixCoversEveryRequestKind) {
  GeneratorOptions o;
  o.nodes = 2;
  o.pods = 2000;
  const Scenario sc = GenerateScenario(o);
  std::set<int> counts;
  int whole = 0, percent = 0, selectors = 0, implicit_count = 0, finite = 0;
  for (const PodSpec& p : sc.pods) {
    const VgpuRequest r = EffectiveRequest(p);
    counts.insert(r.count);
    whole += r.cores == 100;
    percent += p.mem_percent.has_value();
    selectors += static_cast<int>(p.annotations.count("nvidia.com/use-gputype"));
    implicit_count += !p.gpus.has_value();
    finite += p.duration_s.has_value();
  }
  EXPECT_EQ(counts, (std::set<int>{1, 2, 4}));
  EXPECT_GT(whole, 0);
  EXPECT_GT(percent, 0);
  EXPECT_GT(selectors, 0);
  EXPECT_GT(implicit_count, 0);
  EXPECT_GT(finite, 400);
  EXPECT_LT(finite, 800);
}

}  // namespace
}  // namespace vgpu::sim
