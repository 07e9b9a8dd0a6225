#include "core/codec/pod_resources.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vgpu::codec {
namespace {

using nlohmann::json;

TEST(PodResourcesTest, LimitsWinThenRequestsInitFirst) {
  json pod = json::parse(R"({"spec":{
    "initContainers":[{"name":"setup"}],
    "containers":[
      {"name":"a","resources":{"limits":{"nvidia.com/gpu":"2","nvidia.com/gpumem":"3000"},
                               "requests":{"nvidia.com/gpumem":"3k","nvidia.com/gpucores":"30"}}},
      {"name":"b","resources":{"requests":{"nvidia.com/gpumem-percentage":50,"nvidia.com/priority":"0"}}},
      {"name":"c","resources":{"limits":{"cpu":"1","nvidia.com/gpumem":"2Gi"}}}
    ]}})");
  auto reqs = ExtractPodRequests(pod);
  ASSERT_TRUE(reqs.ok()) << reqs.status().ToString();
  ASSERT_EQ(reqs->size(), 4u);
  EXPECT_EQ((*reqs)[0].name, "setup");
  EXPECT_TRUE((*reqs)[0].init);
  EXPECT_FALSE((*reqs)[0].AsksForGpu());
  EXPECT_EQ((*reqs)[1].count, 2);
  EXPECT_EQ((*reqs)[1].memory_mib, 3000);
  EXPECT_EQ((*reqs)[1].cores, 30);
  EXPECT_EQ((*reqs)[2].count, 0);
  EXPECT_EQ((*reqs)[2].memory_percentage, 50);
  EXPECT_EQ((*reqs)[2].priority, 0);
  EXPECT_TRUE((*reqs)[2].AsksForGpu());
  EXPECT_EQ((*reqs)[3].memory_mib, 2048);
}

TEST(PodResourcesTest, ConfigurableNames) {
  json pod = json::parse(
      R"({"spec":{"containers":[{"name":"a","resources":{"limits":{"x.io/vgpu":"1","x.io/mem":"10"}}}]}})");
  ResourceNames names;
  names.count = "x.io/vgpu";
  names.memory = "x.io/mem";
  auto reqs = ExtractPodRequests(pod, names);
  ASSERT_TRUE(reqs.ok());
  EXPECT_EQ((*reqs)[0].count, 1);
  EXPECT_EQ((*reqs)[0].memory_mib, 10);
  EXPECT_EQ(ExtractPodRequests(pod)->at(0).count, 0);
}

TEST(PodResourcesTest, ErrorsNameContainerAndResource) {
  struct Case {
    const char* pod;
    const char* want;
  };
  const Case cases[] = {
      {R"({})", "pod has no spec"},
      {R"({"spec":{"containers":{}}})", "spec.containers is not a list"},
      {R"({"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpucores":"150"}}}]}})",
       "container \"m\": nvidia.com/gpucores: 150 is above the maximum 100"},
      {R"({"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpumem":"lots"}}}]}})",
       "container \"m\": limits.nvidia.com/gpumem: quantity \"lots\""},
      {R"({"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpu":true}}}]}})",
       "limits.nvidia.com/gpu must be a quantity string"},
      // issue 42: values Kubernetes would refuse for extended resources, and overflows.
      {R"({"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpu":"1500m"}}}]}})",
       "container \"m\": limits.nvidia.com/gpu: quantity \"1500m\" is not a whole number"},
      {R"({"spec":{"containers":[{"name":"m","resources":{"requests":{"nvidia.com/gpucores":"0.5"}}}]}})",
       "requests.nvidia.com/gpucores: quantity \"0.5\" is not a whole number"},
      {R"({"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpumem":"3000"},
                                                    "requests":{"nvidia.com/gpumem":"4000"}}}]}})",
       "limits.nvidia.com/gpumem \"3000\" and requests.nvidia.com/gpumem \"4000\" differ"},
      {R"({"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpumem":"2147483648"}}}]}})",
       "nvidia.com/gpumem: 2147483648 MiB is more than any GPU has (at most 2147483647)"},
      {R"({"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpu":18446744073709551615}}}]}})",
       "quantity \"18446744073709551615\" is too large"},
      {R"({"spec":{"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpu":-2}}}]}})",
       "negative values are not allowed"},
  };
  for (const auto& c : cases) {
    auto r = ExtractPodRequests(json::parse(c.pod));
    ASSERT_FALSE(r.ok()) << c.pod;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.pod << " -> " << r.status().message();
  }
}

// HAMi's reading of count: named, it decides (0 = no GPU, whatever else is named); not named,
// memory or cores ask for the default count. Zero memory values are kept (policy code reads them as
// unset).
TEST(PodResourcesTest, ExplicitZeroCountAsksForNoGpu) {
  json pod = json::parse(R"({"spec":{"containers":[
      {"name":"a","resources":{"limits":{"nvidia.com/gpu":"0","nvidia.com/gpumem":"1000"}}},
      {"name":"b","resources":{"limits":{"nvidia.com/gpumem-percentage":"0"}}},
      {"name":"c","resources":{"limits":{"nvidia.com/gpu":"0"}}}]}})");
  auto reqs = ExtractPodRequests(pod);
  ASSERT_TRUE(reqs.ok()) << reqs.status().ToString();
  EXPECT_TRUE((*reqs)[0].count_given);
  EXPECT_FALSE((*reqs)[0].AsksForGpu());
  EXPECT_EQ((*reqs)[1].memory_percentage, 0);
  EXPECT_TRUE((*reqs)[1].AsksForGpu());
  EXPECT_FALSE((*reqs)[2].AsksForGpu());
}

}  // namespace
}  // namespace vgpu::codec
