#include "core/sched/policy.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

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

// Builds a policy the way a pod writes it, for the table's expectations.
GpuPolicy Policy(std::initializer_list<GpuSortKey> keys, bool mutex = false, bool topo = false) {
  GpuPolicy p;
  for (GpuSortKey k : keys) p.keys[p.key_count++] = k;
  p.mutex = mutex;
  p.topology_aware = topo;
  return p;
}

TEST(Policy, GpuPolicyWordsAndCombinations) {
  using K = GpuSortKey;
  struct Case {
    const char* text;
    GpuPolicy want;
    const char* name;  // GpuPolicyName of the result
  };
  const Case cases[] = {
      {"binpack", GpuPolicy::kBinpack, "binpack"},
      {"spread", GpuPolicy::kSpread, "spread"},
      {"TOPOLOGY-AWARE", GpuPolicy::kTopologyAware, "topology-aware"},
      {"mutex", GpuPolicy::kMutex, "mutex"},
      {"numa", Policy({K::kNuma}), "numa"},
      // Ranking keys keep the order written; mutex and topology-aware are rules, not ranks.
      {"binpack,numa", Policy({K::kBinpack, K::kNuma}), "binpack,numa"},
      {"numa, spread", Policy({K::kNuma, K::kSpread}), "numa,spread"},
      {"mutex,binpack", Policy({K::kBinpack}, true), "binpack,mutex"},
      {"spread,topology-aware", Policy({K::kSpread}, false, true), "spread,topology-aware"},
      {"topology-aware,mutex", Policy({}, true, true), "topology-aware,mutex"},
      {"binpack,numa,topology-aware,mutex", Policy({K::kBinpack, K::kNuma}, true, true),
       "binpack,numa,topology-aware,mutex"},
      // Repeats and empty items are harmless, as in HAMi.
      {"binpack,binpack,,mutex,", Policy({K::kBinpack}, true), "binpack,mutex"},
  };
  for (const Case& c : cases) {
    Result<GpuPolicy> r = ParseGpuPolicy(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().ToString();
    EXPECT_EQ(*r, c.want) << c.text;
    EXPECT_EQ(GpuPolicyName(*r), c.name) << c.text;
    Result<GpuPolicy> again = ParseGpuPolicy(GpuPolicyName(*r));
    ASSERT_TRUE(again.ok()) << c.text;
    EXPECT_EQ(*again, *r) << c.text << ": the name reads back";
  }
  EXPECT_EQ(GpuPolicyName(GpuPolicy{}), "spread");
}

TEST(Policy, GpuPolicyOrderFallsBackToSpread) {
  // HAMi ranks by spread when a list names no ranking key ("mutex", "topology-aware").
  const auto order = [](const GpuPolicy& p) {
    return std::vector<GpuSortKey>(p.Order().begin(), p.Order().end());
  };
  EXPECT_EQ(order(GpuPolicy::kMutex), std::vector<GpuSortKey>{GpuSortKey::kSpread});
  EXPECT_EQ(order(Policy({GpuSortKey::kNuma, GpuSortKey::kBinpack})),
            (std::vector<GpuSortKey>{GpuSortKey::kNuma, GpuSortKey::kBinpack}));
}

TEST(Policy, BadGpuPolicyIsAClearError) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"topology", "GPU scheduler policy \"topology\" has the unknown word \"topology\""},
      {"binpack,mutx", "\"binpack,mutx\" has the unknown word \"mutx\""},
      {"binpack,spread", "\"binpack,spread\" asks for both binpack and spread"},
      {"numa,Spread,BINPACK", "asks for both binpack and spread"},
      {"", "\"\" names no policy"},
      {" , ", "names no policy"},
  };
  for (const Case& c : cases) {
    Result<GpuPolicy> r = ParseGpuPolicy(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    const std::string& m = r.status().message();
    EXPECT_NE(m.find(c.want), std::string::npos) << c.text << ": " << m;
    EXPECT_NE(m.find("binpack or spread, numa, topology-aware, mutex"), std::string::npos) << m;
  }
}

TEST(Policy, ScoringWeights) {
  struct Case {
    const char* text;
    bool ok;
    ScoringWeights want;
    const char* error;  // part of the message when !ok
  };
  const Case cases[] = {
      {"slot=2,core=3,memory=4", true, {2, 3, 4}, ""},
      {"memory=10", true, {1, 1, 10}, ""},
      {" core = 0 , slot=5", true, {5, 0, 1}, ""},
      {"", true, {1, 1, 1}, ""},
      // HAMi bounds weights only below: a large ratio is a valid ask.
      {"slot=101,core=0,memory=1000", true, {101, 0, 1000}, ""},
      {"slot=0,core=0,memory=1", true, {0, 0, 1}, ""},
      {"slot=x", false, {}, "\"slot=x\": \"slot\" needs an integer 0..1000000"},
      {"slot", false, {}, "\"slot\" is not key=value"},
      {"gpu=3", false, {}, "unknown weight \"gpu\""},
      {"slot=-1", false, {}, "\"slot\" needs an integer"},
      {"memory=1000001", false, {}, "needs an integer 0..1000000"},
      // HAMi refuses both: a repeated key hides which value was meant, all-zero ranks nothing.
      {"slot=1,slot=2", false, {}, "\"slot=1,slot=2\": \"slot\" is given twice"},
      {"mem=1,memory=2", false, {}, "\"memory\" is given twice"},
      {"slot=0,core=0,memory=0", false, {}, "at least one weight must be > 0"},
  };
  for (const Case& c : cases) {
    Result<ScoringWeights> r = ParseScoringWeights(c.text);
    ASSERT_EQ(r.ok(), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(*r, c.want) << c.text;
    } else {
      EXPECT_NE(r.status().message().find(c.error), std::string::npos)
          << c.text << ": " << r.status().message();
    }
  }
}

}  // namespace
}  // namespace vgpu::sched
