#include "core/sched/pod_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/sched/policy.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;

json PodWith(json limits, json annotations = json::object()) {
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"annotations", annotations}}},
          {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"limits", limits}}}}}}}}};
}

TEST(PodRequest, DefaultsPerContainer) {
  struct Case {
    const char* name;
    json limits;
    RequestDefaults defaults;
    ContainerRequest want;
  };
  const RequestDefaults d0;
  RequestDefaults d5000;
  d5000.mem_mib = 5000;
  d5000.cores = 20;
  d5000.gpu_num = 2;
  const Case cases[] = {
      {"nothing", json::object(), d0, {}},
      {"count only: whole card memory", {{"nvidia.com/gpu", "1"}}, d0, {1, 0, 100, 0}},
      {"count only with defaultMem", {{"nvidia.com/gpu", "1"}}, d5000, {1, 5000, -1, 20}},
      {"mem only gets default count", {{"nvidia.com/gpumem", "3000"}}, d5000, {2, 3000, -1, 20}},
      {"cores only", {{"nvidia.com/gpucores", 30}}, d0, {1, 0, 100, 30}},
      {"percentage",
       {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem-percentage", "25"}},
       d0,
       {2, 0, 25, 0}},
      {"mem wins over percentage",
       {{"nvidia.com/gpu", "1"},
        {"nvidia.com/gpumem", "1Gi"},
        {"nvidia.com/gpumem-percentage", "25"}},
       d0,
       {1, 1024, -1, 0}},
      {"explicit zero count", {{"nvidia.com/gpu", "0"}}, d0, {}},
  };
  for (const Case& c : cases) {
    Result<PodRequest> r = ParsePodRequest(PodWith(c.limits), ResourceNames{}, c.defaults);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    ASSERT_EQ(r->app_containers.size(), 1u) << c.name;
    EXPECT_EQ(r->app_containers[0], c.want) << c.name;
  }
}

TEST(PodRequest, RequestsUsedWhenLimitsMissing) {
  json pod = {{"spec",
               {{"containers",
                 {{{"name", "c"}, {"resources", {{"requests", {{"nvidia.com/gpu", "3"}}}}}}}}}}};
  Result<PodRequest> r = ParsePodRequest(pod, ResourceNames{}, RequestDefaults{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->app_containers[0].count, 3);
}

TEST(PodRequest, CustomResourceNames) {
  ResourceNames names;
  names.count = "example.com/vgpu";
  Result<PodRequest> r =
      ParsePodRequest(PodWith({{"example.com/vgpu", "1"}, {"nvidia.com/gpu", "4"}}), names, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->app_containers[0].count, 1);
}

TEST(PodRequest, InitContainersKeptSeparately) {
  json pod = PodWith({{"nvidia.com/gpu", "1"}});
  pod["spec"]["initContainers"] = {
      {{"name", "i0"}},
      {{"name", "i1"}, {"resources", {{"limits", {{"nvidia.com/gpumem", "100"}}}}}}};
  Result<PodRequest> r = ParsePodRequest(pod, ResourceNames{}, RequestDefaults{});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->init_containers.size(), 2u);
  EXPECT_FALSE(r->init_containers[0].wants_gpu());
  EXPECT_EQ(r->init_containers[1].mem_mib, 100);
  EXPECT_EQ(r->container_count(), 3u);
  EXPECT_TRUE(r->wants_gpu());
}

TEST(PodRequest, Annotations) {
  json annos = {{"nvidia.com/use-gputype", "A100, H100"},
                {"nvidia.com/nouse-gputype", "MIG"},
                {"nvidia.com/use-gpuuuid", "GPU-1,GPU-2"},
                {"nvidia.com/nouse-gpuuuid", "GPU-3"},
                {"nvidia.com/numa-bind", "true"},
                {"hami.io/node-scheduler-policy", "spread"},
                {"hami.io/gpu-scheduler-policy", "topology-aware"},
                {"hami.io/device-scoring-weights", "slot=0,core=2,memory=3"}};
  Result<PodRequest> r = ParsePodRequest(PodWith({{"nvidia.com/gpu", "1"}}, annos), {}, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->use_types, (std::vector<std::string>{"a100", "h100"}));
  EXPECT_EQ(r->nouse_types, (std::vector<std::string>{"mig"}));
  EXPECT_EQ(r->use_uuids, (std::set<std::string>{"GPU-1", "GPU-2"}));
  EXPECT_EQ(r->nouse_uuids, (std::set<std::string>{"GPU-3"}));
  EXPECT_TRUE(r->numa_bind);
  EXPECT_EQ(r->node_policy, NodePolicy::kSpread);
  EXPECT_EQ(r->gpu_policy, GpuPolicy::kTopologyAware);
  EXPECT_EQ(r->weights, (ScoringWeights{0, 2, 3}));
}

TEST(PodRequest, CombinedGpuPolicyAnnotation) {
  Result<PodRequest> r = ParsePodRequest(
      PodWith({{"nvidia.com/gpu", "1"}}, {{"hami.io/gpu-scheduler-policy", "binpack, mutex"}}), {},
      {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(GpuPolicyName(r->gpu_policy), "binpack,mutex");
  EXPECT_TRUE(r->gpu_policy.mutex);
}

// nvidia.com/vgpu-mode: a comma list of HAMi's mode words; absent = any mode.
TEST(PodRequest, VgpuModeTable) {
  struct Case {
    json annos;
    std::set<std::string> want;
  };
  const Case cases[] = {
      {json::object(), {}},
      {{{"nvidia.com/vgpu-mode", "mps"}}, {"mps"}},
      {{{"nvidia.com/vgpu-mode", "hami-core"}}, {"hami-core"}},
      {{{"nvidia.com/vgpu-mode", " hami-core , mps "}}, {"hami-core", "mps"}},
      {{{"nvidia.com/vgpu-mode", "mig"}}, {"mig"}},
      {{{"nvidia.com/vgpu-mode", ""}}, {}},
  };
  for (const Case& c : cases) {
    Result<PodRequest> r = ParsePodRequest(PodWith({{"nvidia.com/gpu", "1"}}, c.annos), {}, {});
    ASSERT_TRUE(r.ok()) << c.annos.dump() << ": " << r.status().ToString();
    EXPECT_EQ(r->modes, c.want) << c.annos.dump();
  }
}

TEST(PodRequest, PolicyDefaultsFromConfig) {
  RequestDefaults d;
  d.node_policy = NodePolicy::kSpread;
  d.gpu_policy = GpuPolicy::kBinpack;
  Result<PodRequest> r = ParsePodRequest(PodWith({{"nvidia.com/gpu", "1"}}), {}, d);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->node_policy, NodePolicy::kSpread);
  EXPECT_EQ(r->gpu_policy, GpuPolicy::kBinpack);
}

TEST(PodRequest, BadInputIsAClearError) {
  struct Case {
    const char* name;
    json pod;
    const char* want;
  };
  const Case cases[] = {
      {"not an object", json::array(), "not a JSON object"},
      {"no spec", json{{"metadata", json::object()}}, "no spec"},
      {"too many GPUs", PodWith({{"nvidia.com/gpu", "5000"}}), "more than any node has"},
      {"containers not a list", json{{"spec", {{"containers", "x"}}}}, "spec.containers"},
      {"garbage quantity", PodWith({{"nvidia.com/gpumem", "lots"}}), "nvidia.com/gpumem"},
      {"negative quantity", PodWith({{"nvidia.com/gpu", "-1"}}), "nvidia.com/gpu"},
      {"percentage over 100", PodWith({{"nvidia.com/gpumem-percentage", "150"}}), "maximum 100"},
      {"cores over 100", PodWith({{"nvidia.com/gpucores", "101"}}), "maximum 100"},
      {"bool quantity", PodWith({{"nvidia.com/gpu", true}}), "must be a quantity"},
      {"unknown node policy",
       PodWith({{"nvidia.com/gpu", "1"}}, {{"hami.io/node-scheduler-policy", "fast"}}),
       "hami.io/node-scheduler-policy"},
      {"unknown gpu policy",
       PodWith({{"nvidia.com/gpu", "1"}}, {{"hami.io/gpu-scheduler-policy", "binpack,x"}}),
       "pod annotation hami.io/gpu-scheduler-policy: GPU scheduler policy \"binpack,x\" has the "
       "unknown word \"x\""},
      {"contradicting gpu policy",
       PodWith({{"nvidia.com/gpu", "1"}}, {{"hami.io/gpu-scheduler-policy", "spread,binpack"}}),
       "hami.io/gpu-scheduler-policy: GPU scheduler policy \"spread,binpack\" asks for both"},
      {"bad weights",
       PodWith({{"nvidia.com/gpu", "1"}}, {{"hami.io/device-scoring-weights", "a=b"}}),
       "pod annotation hami.io/device-scoring-weights: device scoring weights \"a=b\": unknown "
       "weight \"a\""},
      {"all-zero weights",
       PodWith({{"nvidia.com/gpu", "1"}},
               {{"hami.io/device-scoring-weights", "slot=0,core=0,memory=0"}}),
       "\"slot=0,core=0,memory=0\": at least one weight must be > 0"},
      {"unknown vgpu mode", PodWith({{"nvidia.com/gpu", "1"}}, {{"nvidia.com/vgpu-mode", "MPS"}}),
       "names mode \"MPS\", want a comma list of hami-core, mig, mps"},
      {"time-slice is not a pod mode",
       PodWith({{"nvidia.com/gpu", "1"}}, {{"nvidia.com/vgpu-mode", "mps,time-slice"}}),
       "nvidia.com/vgpu-mode"},
      {"bad numa", PodWith({{"nvidia.com/gpu", "1"}}, {{"nvidia.com/numa-bind", "maybe"}}),
       "want true or false"},
      {"annotation not a string",
       PodWith({{"nvidia.com/gpu", "1"}}, {{"nvidia.com/use-gputype", 5}}), "not a string"},
  };
  for (const Case& c : cases) {
    Result<PodRequest> r = ParsePodRequest(c.pod, ResourceNames{}, RequestDefaults{});
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.name << ": " << r.status().message();
  }
}

}  // namespace
}  // namespace vgpu::sched
