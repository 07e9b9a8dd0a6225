#include "core/allocate/spec_check.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vgpu::allocate {
namespace {

using nlohmann::json;

// A pod whose only container asks `limits`, read as the device plugin reads it.
PodView PodAsking(json limits) {
  json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "team"}}},
      {"spec",
       {{"containers", {{{"name", "main"}, {"resources", {{"limits", std::move(limits)}}}}}}}}};
  return *PodViewFromJson(pod);
}

const NodeGpuMemory kNode = {{"GPU-a", 16384}, {"GPU-b", 16384}};

// issue 42, the UPDATE bypass with the webhook down: the device list is an annotation a tenant
// can rewrite; the container's resources are not. An entry granting more than they ask is refused.
TEST(CheckEntryAgainstSpec, GrantsNoMoreThanTheSpecAsks) {
  sched::RequestDefaults defaults;
  sched::RequestDefaults d5000;
  d5000.mem_mib = 5000;
  d5000.cores = 20;
  const json asks3000 = {
      {"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}};
  struct Case {
    const char* name;
    json limits;
    sched::RequestDefaults defaults;
    std::vector<GrantedDevice> entry;
    const char* error;  // nullptr = ok
  };
  const Case cases[] = {
      {"as asked", asks3000, defaults, {{"GPU-a", 3000, 30}}, nullptr},
      {"less than asked", asks3000, defaults, {{"GPU-a", 1000, 10}}, nullptr},
      {"more memory",
       asks3000,
       defaults,
       {{"GPU-a", 16384, 30}},
       "asks for 3000 MiB on GPU GPU-a (from its spec and the defaults), but is granted 16384"},
      {"no compute limit", asks3000, defaults, {{"GPU-a", 3000, 0}}, "no compute limit (0)"},
      {"more cores", asks3000, defaults, {{"GPU-a", 3000, 100}}, "granted 100 %"},
      {"two GPUs for one",
       asks3000,
       defaults,
       {{"GPU-a", 3000, 30}, {"GPU-b", 3000, 30}},
       "asks for 1 vGPU(s) in its spec, but its device list entry grants 2"},
      {"percentage resolves on the GPU",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "50"}},
       defaults,
       {{"GPU-b", 8192, 0}},
       nullptr},
      {"percentage exceeded",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "50"}},
       defaults,
       {{"GPU-b", 8193, 0}},
       "asks for 8192 MiB"},
      {"percentage 0 is the whole card",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}},
       defaults,
       {{"GPU-a", 16384, 0}},
       nullptr},
      // What the webhook would have added is not in a spec it never saw: the defaults decide.
      {"count only: whole card, any share",
       {{"nvidia.com/gpu", "1"}},
       defaults,
       {{"GPU-a", 16384, 100}},
       nullptr},
      {"count only under defaultMemory",
       {{"nvidia.com/gpu", "1"}},
       d5000,
       {{"GPU-a", 16384, 20}},
       "asks for 5000 MiB"},
      {"count only under defaultCores",
       {{"nvidia.com/gpu", "1"}},
       d5000,
       {{"GPU-a", 5000, 0}},
       "asks for 20 % of GPU GPU-a's cores"},
      {"a container that asks for no GPU",
       json::object(),
       defaults,
       {{"GPU-a", 1000, 0}},
       "asks for 0 vGPU(s)"},
      {"explicit 0 GPUs",
       {{"nvidia.com/gpu", "0"}, {"nvidia.com/gpumem", "1000"}},
       defaults,
       {{"GPU-a", 1000, 0}},
       "asks for 0 vGPU(s)"},
      {"unreadable resources",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "0.5"}},
       defaults,
       {{"GPU-a", 1, 0}},
       "cannot be read"},
  };
  for (const Case& c : cases) {
    const PodView pod = PodAsking(c.limits);
    Status s = CheckEntryAgainstSpec(c.entry, pod, pod.containers[0], c.defaults, kNode);
    if (c.error == nullptr) {
      EXPECT_TRUE(s.ok()) << c.name << ": " << s.ToString();
      continue;
    }
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_NE(s.message().find(c.error), std::string::npos) << c.name << ": " << s.message();
    if (pod.resources_error.empty()) {
      EXPECT_NE(s.message().find("container main of pod team/p"), std::string::npos) << s.message();
    }
  }
}

TEST(CheckEntryAgainstSpec, ConfiguredResourceNames) {
  codec::ResourceNames names;
  names.count = "example.com/vgpu";
  names.memory = "example.com/vgpu-memory";
  json pod = {
      {"metadata", {{"name", "p"}, {"namespace", "team"}}},
      {"spec",
       {{"containers",
         {{{"name", "main"},
           {"resources",
            {{"limits", {{"example.com/vgpu", "1"}, {"example.com/vgpu-memory", "2000"}}}}}}}}}}};
  const PodView view = *PodViewFromJson(pod, names);
  EXPECT_TRUE(
      CheckEntryAgainstSpec({{"GPU-a", 2000, 0}}, view, view.containers[0], {}, kNode).ok());
  EXPECT_FALSE(
      CheckEntryAgainstSpec({{"GPU-a", 2001, 0}}, view, view.containers[0], {}, kNode).ok());
}

}  // namespace
}  // namespace vgpu::allocate
