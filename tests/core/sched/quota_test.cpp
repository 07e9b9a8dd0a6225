#include "core/sched/quota.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vgpu::sched {
namespace {

using nlohmann::json;

QuotaLimit Limits(std::optional<int64_t> mem, std::optional<int64_t> cores,
                  std::string mem_source = "", std::string cores_source = "") {
  return {mem, cores, std::move(mem_source), std::move(cores_source)};
}

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

// Every key form a ResourceQuota can carry for the two resources: HAMi's `limits.`, kube's
// `requests.` (the only prefix kube's own admission counts for extended resources) and the bare
// name. Several forms in one object all hold, so the smallest wins and is named as the source.
TEST(Quota, KeyForms) {
  struct Case {
    const char* name;
    const char* hard;  // JSON object
    std::optional<int64_t> mem, cores;
    const char* mem_source;  // "" when no memory limit
    const char* cores_source;
  };
  const Case cases[] = {
      {"limits", R"({"limits.nvidia.com/gpumem":"8Gi","limits.nvidia.com/gpucores":"50"})", 8192,
       50, "ResourceQuota q limits.nvidia.com/gpumem",
       "ResourceQuota q limits.nvidia.com/gpucores"},
      {"requests", R"({"requests.nvidia.com/gpumem":"4000","requests.nvidia.com/gpucores":80})",
       4000, 80, "ResourceQuota q requests.nvidia.com/gpumem",
       "ResourceQuota q requests.nvidia.com/gpucores"},
      {"bare", R"({"nvidia.com/gpumem":2000,"nvidia.com/gpucores":"30"})", 2000, 30,
       "ResourceQuota q nvidia.com/gpumem", "ResourceQuota q nvidia.com/gpucores"},
      {"smallest of three", R"({"limits.nvidia.com/gpumem":"9000",
        "requests.nvidia.com/gpumem":"7000","nvidia.com/gpumem":"8000"})",
       7000, std::nullopt, "ResourceQuota q requests.nvidia.com/gpumem", ""},
      {"limits smaller than requests", R"({"limits.nvidia.com/gpucores":"40",
        "requests.nvidia.com/gpucores":"60"})",
       std::nullopt, 40, "", "ResourceQuota q limits.nvidia.com/gpucores"},
      // Zero is a limit (nothing may be charged), as kube reads hard: 0. HAMi reads 0 as none.
      {"zero", R"({"requests.nvidia.com/gpumem":"0"})", 0, std::nullopt,
       "ResourceQuota q requests.nvidia.com/gpumem", ""},
      // Other resources and prefixes are not ours: nvidia.com/gpu counts, limit. (no s).
      {"others", R"({"requests.nvidia.com/gpu":"4","limit.nvidia.com/gpumem":"1000",
        "requests.memory":"1Gi"})",
       std::nullopt, std::nullopt, "", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json quota = {{"metadata", {{"name", "q"}, {"namespace", "ns"}}},
                  {"spec", {{"hard", json::parse(c.hard)}}}};
    Result<QuotaLimit> q = ParseResourceQuota(quota, ResourceNames{});
    ASSERT_TRUE(q.ok()) << q.status().ToString();
    EXPECT_EQ(q->mem_mib, c.mem);
    EXPECT_EQ(q->cores, c.cores);
    EXPECT_EQ(q->mem_source, c.mem_source);
    EXPECT_EQ(q->cores_source, c.cores_source);
  }

  // A bad value under any form names the object and the key.
  for (const char* key : {"requests.nvidia.com/gpucores", "nvidia.com/gpumem"}) {
    json quota = {{"metadata", {{"name", "team-gpu"}}}, {"spec", {{"hard", {{key, "a lot"}}}}}};
    Result<QuotaLimit> bad = ParseResourceQuota(quota, ResourceNames{});
    ASSERT_FALSE(bad.ok()) << key;
    EXPECT_NE(bad.status().message().find(std::string("ResourceQuota team-gpu hard.") + key),
              std::string::npos)
        << bad.status().message();
  }
}

// Renamed resources (--resource-mem / --resource-cores) are read under every form too.
TEST(Quota, RenamedResources) {
  ResourceNames names;
  names.memory = "example.com/vmem";
  names.cores = "example.com/vcores";
  Result<QuotaLimit> q =
      ParseResourceQuota(json::parse(R"({"spec":{"hard":{"requests.example.com/vmem":"1000",
                   "example.com/vcores":"20","limits.nvidia.com/gpumem":"5"}}})"),
                         names);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->mem_mib, 1000);
  EXPECT_EQ(q->cores, 20);
}

// Several quotas of one namespace: each resource's smallest limit and its source.
TEST(Quota, TightenKeepsEachResourcesSmallest) {
  QuotaLimit a = Limits(8000, 100, "ResourceQuota a limits.nvidia.com/gpumem",
                        "ResourceQuota a limits.nvidia.com/gpucores");
  const QuotaLimit b = Limits(9000, 50, "ResourceQuota b limits.nvidia.com/gpumem",
                              "ResourceQuota b requests.nvidia.com/gpucores");
  a.Tighten(b);
  EXPECT_EQ(a.mem_mib, 8000);
  EXPECT_EQ(a.mem_source, "ResourceQuota a limits.nvidia.com/gpumem");
  EXPECT_EQ(a.cores, 50);
  EXPECT_EQ(a.cores_source, "ResourceQuota b requests.nvidia.com/gpucores");
  QuotaLimit none;
  none.Tighten(QuotaLimit{});
  EXPECT_TRUE(none.empty());
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
      {Limits(std::nullopt, std::nullopt), {100000, 900}, {100000, 900}, nullptr},
      {Limits(10000, std::nullopt), {6000, 0}, {4000, 0}, nullptr},
      {Limits(10000, std::nullopt), {6000, 0}, {4001, 0}, "GPU memory quota is 10000 MiB"},
      {Limits(10000, std::nullopt, "ResourceQuota q limits.nvidia.com/gpumem"),
       {6000, 0},
       {4001, 0},
       "namespace team-a: GPU memory quota is 10000 MiB (ResourceQuota q "
       "limits.nvidia.com/gpumem), 6000 MiB in use, this pod asks 4001 MiB"},
      {Limits(std::nullopt, 100), {0, 60}, {0, 50}, "GPU cores quota is 100%"},
      {Limits(std::nullopt, 100, "", "ResourceQuota q nvidia.com/gpucores"),
       {0, 60},
       {0, 50},
       "GPU cores quota is 100% (ResourceQuota q nvidia.com/gpucores), 60% in use, this pod asks "
       "50%"},
      {Limits(0, std::nullopt), {0, 0}, {1, 0}, "GPU memory quota is 0 MiB"},  // zero: nothing fits
      {Limits(std::nullopt, 100), {0, 200}, {0, 0}, nullptr},  // asks nothing: never blocked
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
