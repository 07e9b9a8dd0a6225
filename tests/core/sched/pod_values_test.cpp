// Every value a pod's author can write in its vGPU resources and placement annotations, through
// the webhook's decision (AdmitPod) and the scheduler's reading of a pod that skipped it
// (ParsePodRequest, FitPod): each is refused with a message naming it and what is allowed, or read
// as a documented default (issue 42: `nvidia.com/gpumem-percentage: "0"` was placed as 0 MiB,
// which libvgpu.so reads as "unlimited", and charged nothing to the namespace's quota).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/sched/fit.h"
#include "core/sched/pod_request.h"
#include "core/sched/quota.h"
#include "core/sched/webhook_mutation.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;

json PodOf(json container, json annotations = json::object()) {
  return {{"metadata", {{"name", "p"}, {"namespace", "team"}, {"annotations", annotations}}},
          {"spec", {{"containers", json::array({std::move(container)})}}}};
}

json Limits(json limits) {
  return {{"name", "c"}, {"resources", {{"limits", std::move(limits)}}}};
}

// One 16 GiB GPU, empty.
NodeView Node16G() {
  NodeView n;
  n.name = "n1";
  GpuDevice g;
  g.uuid = "GPU-a";
  g.slots = 10;
  g.mem_mib = 16384;
  n.gpus = {g};
  n.usage = {DeviceUsage{}};
  return n;
}

struct Outcome {
  const char* denial = nullptr;   // a fragment of the denial; nullptr = admitted
  int64_t placed_mib = -1;        // admitted and asking a vGPU: MiB placed on a 16 GiB card
  const char* warning = nullptr;  // a fragment of the webhook's warning, if one is due
};

struct Case {
  const char* name;
  json container;
  Outcome want;
};

void Check(const Case& c, const RequestDefaults& defaults = {}) {
  AdmissionConfig cfg;
  cfg.defaults = defaults;
  const json pod = PodOf(c.container);
  const AdmissionDecision d = AdmitPod(pod, cfg, std::nullopt);
  const Result<PodRequest> req = ParsePodRequest(pod, ResourceNames{}, defaults);
  if (c.want.denial != nullptr) {
    EXPECT_FALSE(d.allowed) << c.name;
    EXPECT_NE(d.message.find(c.want.denial), std::string::npos) << c.name << ": " << d.message;
    // A pod that skipped the webhook gets the same verdict from the scheduler.
    ASSERT_FALSE(req.ok()) << c.name;
    EXPECT_NE(req.status().message().find(c.want.denial), std::string::npos)
        << c.name << ": " << req.status().message();
    return;
  }
  EXPECT_TRUE(d.allowed) << c.name << ": " << d.message;
  ASSERT_TRUE(req.ok()) << c.name << ": " << req.status().ToString();
  if (c.want.warning != nullptr) {
    ASSERT_EQ(d.warnings.size(), 1u) << c.name;
    EXPECT_NE(d.warnings[0].find(c.want.warning), std::string::npos)
        << c.name << ": " << d.warnings[0];
  } else {
    EXPECT_TRUE(d.warnings.empty()) << c.name << ": " << d.warnings.front();
  }
  if (c.want.placed_mib < 0) {
    EXPECT_FALSE(req->wants_gpu()) << c.name;
    EXPECT_FALSE(d.asks_vgpu) << c.name;
    return;
  }
  ASSERT_TRUE(req->wants_gpu()) << c.name;
  const NodeFit fit = FitPod(Node16G(), *req);
  ASSERT_TRUE(fit.ok) << c.name << ": " << fit.message;
  const AllocatedDevice& placed = fit.allocation.containers[0][0];
  EXPECT_EQ(placed.mem_mib, c.want.placed_mib) << c.name;
  // The quota is charged what is granted.
  EXPECT_EQ(ChargeOf(fit.allocation).mem_mib, c.want.placed_mib) << c.name;
}

TEST(PodValues, GpuCount) {
  const Case cases[] = {
      {"1", Limits({{"nvidia.com/gpu", "1"}}), {.placed_mib = 16384}},
      {"0 alone: no GPU", Limits({{"nvidia.com/gpu", "0"}}), {}},
      // HAMi's reading: an explicit count decides; the memory beside it is ignored, not a GPU.
      {"0 with memory: no GPU",
       Limits({{"nvidia.com/gpu", "0"}, {"nvidia.com/gpumem", "1000"}}),
       {.warning = "nvidia.com/gpu is 0, so the container gets no GPU"}},
      {"negative", Limits({{"nvidia.com/gpu", "-1"}}), {.denial = "negative values"}},
      {"more than any node", Limits({{"nvidia.com/gpu", "1025"}}), {.denial = "at most 1024"}},
      {"1.5k = 1500", Limits({{"nvidia.com/gpu", "1.5k"}}), {.denial = "at most 1024"}},
      {"past int64",
       Limits({{"nvidia.com/gpu", "99999999999999999999"}}),
       {.denial = "is too large"}},
      {"fraction 0.5", Limits({{"nvidia.com/gpu", "0.5"}}), {.denial = "not a whole number"}},
      {"milli 1500m", Limits({{"nvidia.com/gpu", "1500m"}}), {.denial = "not a whole number"}},
      {"exponent 1e0", Limits({{"nvidia.com/gpu", "1e0"}}), {.placed_mib = 16384}},
      {"words", Limits({{"nvidia.com/gpu", "two"}}), {.denial = "no number"}},
      {"empty", Limits({{"nvidia.com/gpu", ""}}), {.denial = "no number"}},
      {"JSON fraction", Limits({{"nvidia.com/gpu", 1.5}}), {.denial = "must be a quantity string"}},
      // 2^64-1 once read as int64 came out as -1: "negative" for a number too large.
      {"JSON 2^64-1",
       Limits({{"nvidia.com/gpu", UINT64_MAX}}),
       {.denial = "18446744073709551615\" is too large"}},
  };
  for (const Case& c : cases) Check(c);
}

TEST(PodValues, Memory) {
  RequestDefaults d5000;
  d5000.mem_mib = 5000;
  const Case cases[] = {
      {"3000",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}}),
       {.placed_mib = 3000}},
      {"0 is unset: the whole card",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "0"}}),
       {.placed_mib = 16384, .warning = "0 means unset"}},
      {"negative",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "-1"}}),
       {.denial = "negative values"}},
      {"fraction",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1.5"}}),
       {.denial = "not a whole number"}},
      {"bytes round up to MiB",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000Ki"}}),
       {.placed_mib = 1}},
      {"past int32 MiB",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "2147483648"}}),
       {.denial = "more than any GPU has"}},
      {"an exbibyte",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1Ei"}}),
       {.denial = "more than any GPU has"}},
      {"words",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "lots"}}),
       {.denial = "quantity \"lots\""}},
      {"limits and requests differ",
       {{"name", "c"},
        {"resources",
         {{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}}},
          {"requests", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "8000"}}}}}},
       {.denial = "limits.nvidia.com/gpumem \"1000\" and requests.nvidia.com/gpumem \"8000\" "
                  "differ"}},
      {"limits and requests agree in other spellings",
       {{"name", "c"},
        {"resources",
         {{"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3k"}}},
          {"requests", {{"nvidia.com/gpu", 1}, {"nvidia.com/gpumem", "3000"}}}}}},
       {.placed_mib = 3000}},
  };
  for (const Case& c : cases) Check(c);
  Check({"0 is unset: defaultMemory",
         Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "0"}}),
         {.placed_mib = 5000, .warning = "the default, 5000 MiB per vGPU"}},
        d5000);
}

// issue 42: "0" was placed as 0 MiB (CUDA_DEVICE_MEMORY_LIMIT_0=0m, unlimited) and charged 0.
TEST(PodValues, MemoryPercentage) {
  RequestDefaults d5000;
  d5000.mem_mib = 5000;
  const Case cases[] = {
      {"50",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "50"}}),
       {.placed_mib = 8192}},
      {"0 is unset: the whole card",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}}),
       {.placed_mib = 16384, .warning = "nvidia.com/gpumem-percentage 0 means unset"}},
      {"0 alone asks one vGPU of the whole card",
       Limits({{"nvidia.com/gpumem-percentage", "0"}}),
       {.placed_mib = 16384, .warning = "0 means unset"}},
      {"1 % of 16 GiB",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "1"}}),
       {.placed_mib = 163}},
      {"101",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "101"}}),
       {.denial = "above the maximum 100"}},
      {"negative",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "-1"}}),
       {.denial = "negative values"}},
      {"fraction",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "50.5"}}),
       {.denial = "not a whole number"}},
      {"huge",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "1e18"}}),
       {.denial = "above the maximum 100"}},
  };
  for (const Case& c : cases) Check(c);
  Check({"0 is unset: defaultMemory",
         Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}}),
         {.placed_mib = 5000, .warning = "5000 MiB per vGPU"}},
        d5000);
}

TEST(PodValues, CoresAndPriority) {
  const Case cases[] = {
      // 0 = no compute limit, HAMi's documented meaning (a shared GPU without an SM share).
      {"cores 0",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "0"}}),
       {.placed_mib = 16384}},
      {"cores 101",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "101"}}),
       {.denial = "above the maximum 100"}},
      {"cores negative",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "-5"}}),
       {.denial = "negative values"}},
      {"cores 1500m",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "1500m"}}),
       {.denial = "not a whole number"}},
      {"priority 2",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/priority", "2"}}),
       {.denial = "above the maximum 1"}},
      {"priority negative",
       Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/priority", "-1"}}),
       {.denial = "negative values"}},
  };
  for (const Case& c : cases) Check(c);
}

// Init containers are read and defaulted like app containers.
TEST(PodValues, InitContainers) {
  json pod = PodOf({{"name", "app"}});
  pod["spec"]["initContainers"] = {
      Limits({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}})};
  const AdmissionDecision d = AdmitPod(pod, AdmissionConfig{}, std::nullopt);
  EXPECT_TRUE(d.allowed) << d.message;
  ASSERT_EQ(d.warnings.size(), 1u);
  Result<PodRequest> req = ParsePodRequest(pod, ResourceNames{}, RequestDefaults{});
  ASSERT_TRUE(req.ok());
  const NodeFit fit = FitPod(Node16G(), *req);
  ASSERT_TRUE(fit.ok) << fit.message;
  EXPECT_EQ(fit.allocation.containers[0][0].mem_mib, 16384);

  pod["spec"]["initContainers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = "-3";
  EXPECT_FALSE(AdmitPod(pod, AdmissionConfig{}, std::nullopt).allowed);
  EXPECT_FALSE(ParsePodRequest(pod, ResourceNames{}, RequestDefaults{}).ok());
}

TEST(PodValues, PlacementAnnotations) {
  struct AnnotationCase {
    const char* name;
    json annotations;
    const char* denial;  // nullptr = admitted
  };
  const AnnotationCase cases[] = {
      {"weights", {{"hami.io/device-scoring-weights", "slot=1,core=2,memory=3"}}, nullptr},
      {"weight negative", {{"hami.io/device-scoring-weights", "slot=-1"}}, "integer 0..1000000"},
      {"weight huge",
       {{"hami.io/device-scoring-weights", "memory=99999999999999999999"}},
       "integer 0..1000000"},
      {"weight fraction", {{"hami.io/device-scoring-weights", "core=0.5"}}, "integer 0..1000000"},
      {"weight unknown", {{"hami.io/device-scoring-weights", "luck=7"}}, "unknown weight \"luck\""},
      {"weight not key=value", {{"hami.io/device-scoring-weights", "slot"}}, "not key=value"},
      // HAMi refuses an all-zero weighting (it would rank nothing) when it filters; vgpu at once.
      {"weights all 0",
       {{"hami.io/device-scoring-weights", "slot=0,core=0,memory=0"}},
       "at least one weight must be > 0"},
      {"weight above 100", {{"hami.io/device-scoring-weights", "memory=1000"}}, nullptr},
      {"uuid list with blanks", {{"nvidia.com/use-gpuuuid", " GPU-a, ,,GPU-b "}}, nullptr},
      {"numa-bind maybe", {{"nvidia.com/numa-bind", "maybe"}}, "want true or false"},
      {"node policy unknown",
       {{"hami.io/node-scheduler-policy", "random"}},
       "want binpack or spread"},
      {"gpu policy unknown", {{"hami.io/gpu-scheduler-policy", "fastest"}}, "topology-aware"},
      {"gpu policy combined", {{"hami.io/gpu-scheduler-policy", "binpack,numa,mutex"}}, nullptr},
      {"gpu policy contradicting",
       {{"hami.io/gpu-scheduler-policy", "binpack,spread"}},
       "both binpack and spread"},
      {"not a string", {{"hami.io/gpu-scheduler-policy", 3}}, "is not a string"},
  };
  for (const AnnotationCase& c : cases) {
    const json pod = PodOf(Limits({{"nvidia.com/gpu", "1"}}), c.annotations);
    const AdmissionDecision d = AdmitPod(pod, AdmissionConfig{}, std::nullopt);
    const Result<PodRequest> req = ParsePodRequest(pod, ResourceNames{}, RequestDefaults{});
    if (c.denial == nullptr) {
      EXPECT_TRUE(d.allowed) << c.name << ": " << d.message;
      EXPECT_TRUE(req.ok()) << c.name;
      continue;
    }
    EXPECT_FALSE(d.allowed) << c.name;
    EXPECT_NE(d.message.find(c.denial), std::string::npos) << c.name << ": " << d.message;
    ASSERT_FALSE(req.ok()) << c.name;
  }
  // A UUID list steers the pod onto the GPUs it names, and onto no other.
  const json pinned =
      PodOf(Limits({{"nvidia.com/gpu", "1"}}), {{"nvidia.com/use-gpuuuid", "GPU-b"}});
  Result<PodRequest> req = ParsePodRequest(pinned, ResourceNames{}, RequestDefaults{});
  ASSERT_TRUE(req.ok());
  EXPECT_FALSE(FitPod(Node16G(), *req).ok);
}

// The fit never places 0 MiB, whatever reaches it: a card too small for the percentage, an ask
// that bypassed the parser, a node that registers a GPU without memory.
TEST(PodValues, FitNeverPlacesZeroMemory) {
  PodRequest pod;
  ContainerRequest tiny;
  tiny.count = 1;
  tiny.mem_percent = 1;
  pod.app_containers = {tiny};
  NodeView small = Node16G();
  small.gpus[0].mem_mib = 50;  // 1 % of 50 MiB is 0
  NodeFit fit = FitPod(small, pod);
  EXPECT_FALSE(fit.ok);
  EXPECT_EQ(fit.reason, Reason::kCardInsufficientMemory) << fit.message;

  ContainerRequest zero;
  zero.count = 1;
  zero.mem_percent = 0;  // not what ApplyDefaults makes of "0" any more
  pod.app_containers = {zero};
  EXPECT_FALSE(FitPod(Node16G(), pod).ok);
  zero.mem_percent = -1;
  zero.mem_mib = 0;
  pod.app_containers = {zero};
  EXPECT_FALSE(FitPod(Node16G(), pod).ok);
}

}  // namespace
}  // namespace vgpu::sched
