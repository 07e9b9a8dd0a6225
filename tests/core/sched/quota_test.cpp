#include "core/sched/quota.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vgpu::sched {
namespace {

using nlohmann::json;

TEST(Quota, ParsesHardLimits) {
  const ResourceNames names;
  Result<QuotaLimit> q =
      ParseResourceQuota(json::parse(R"({"spec":{"hard":{"limits.nvidia.com/gpumem":"20000",
                   "limits.nvidia.com/gpucores":"150","pods":"10"}}})"),
                         names);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->mem_mib, 20000);
  EXPECT_EQ(q->cores, 150);

  Result<QuotaLimit> none =
      ParseResourceQuota(json::parse(R"({"spec":{"hard":{"pods":"3"}}})"), names);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  Result<QuotaLimit> bad = ParseResourceQuota(
      json::parse(R"({"spec":{"hard":{"limits.nvidia.com/gpumem":"lots"}}})"), names);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("limits.nvidia.com/gpumem"), std::string::npos);
}

TEST(Quota, ChargeCountsInitPeakAgainstAppSum) {
  PodAllocation alloc;
  alloc.init_count = 1;
  alloc.containers = {{{"GPU-a", 8000, 50}},                        // init: alone on GPU-a
                      {{"GPU-a", 3000, 10}},                        // app 1
                      {{"GPU-a", 2000, 10}, {"GPU-b", 1000, 20}}};  // app 2
  // GPU-a: max(8000, 5000) MiB, max(50, 20) cores; GPU-b: 1000 MiB, 20 cores.
  EXPECT_EQ(ChargeOf(alloc), (QuotaAmount{9000, 70}));

  PodRequest req;
  req.init_containers = {{1, 8000, -1, 50}};
  req.app_containers = {{2, 3000, -1, 10}, {1, 0, 50, 10}};
  // app: 2*3000 MiB (percentage unknown before placement), 2*10 + 10 cores; init peak wins memory.
  EXPECT_EQ(RequestedCharge(req), (QuotaAmount{8000, 50}));
}

TEST(Quota, Violations) {
  struct Case {
    QuotaLimit limit;
    QuotaAmount used, demand;
    const char* want;  // substring, or nullptr when it fits
  };
  const Case cases[] = {
      {{}, {100000, 900}, {100000, 900}, nullptr},
      {{10000, std::nullopt}, {6000, 0}, {4000, 0}, nullptr},
      {{10000, std::nullopt}, {6000, 0}, {4001, 0}, "GPU memory quota is 10000 MiB"},
      {{std::nullopt, 100}, {0, 60}, {0, 50}, "GPU cores quota is 100%"},
      {{std::nullopt, 100}, {0, 200}, {0, 0}, nullptr},  // asks nothing: never blocked
  };
  for (const Case& c : cases) {
    auto v = QuotaViolation(c.limit, c.used, c.demand, "team-a");
    if (c.want == nullptr) {
      EXPECT_FALSE(v.has_value()) << *v;
    } else {
      ASSERT_TRUE(v.has_value()) << c.want;
      EXPECT_NE(v->find(c.want), std::string::npos) << *v;
      EXPECT_NE(v->find("ResourceQuotaExceeded"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace vgpu::sched
