#include "core/codec/extended_resources.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

DeviceInfo Gpu(const std::string& id, int64_t devmem, int32_t devcore, bool health) {
  DeviceInfo d;
  d.id = id;
  d.count = 10;
  d.devmem = devmem;
  d.devcore = devcore;
  d.health = health;
  return d;
}

ResourceNames Names(const std::string& memory, const std::string& cores) {
  ResourceNames n;
  n.memory = memory;
  n.cores = cores;
  return n;
}

TEST(ExtendedResourceCapacity, SumsTheHealthyGpusAsRegistered) {
  struct Case {
    const char* what;
    NodeInventory inventory;
    ResourceNames names;
    ExtendedCapacity want;
  };
  const ResourceNames hami;  // nvidia.com/gpumem, nvidia.com/gpucores
  const Case cases[] = {
      {"two GPUs",
       {Gpu("a", 40960, 100, true), Gpu("b", 40960, 100, true)},
       hami,
       {{"nvidia.com/gpumem", 81920}, {"nvidia.com/gpucores", 200}}},
      // devmem is registered with the memory scaling applied (x1.5 here), devcore as 100 x core
      // scaling (x2): the sums are what the scheduler fills, not the physical figures.
      {"scaled",
       {Gpu("a", 61440, 200, true), Gpu("b", 61440, 200, true)},
       hami,
       {{"nvidia.com/gpumem", 122880}, {"nvidia.com/gpucores", 400}}},
      {"an unhealthy GPU does not count",
       {Gpu("a", 16384, 100, true), Gpu("b", 16384, 100, false)},
       hami,
       {{"nvidia.com/gpumem", 16384}, {"nvidia.com/gpucores", 100}}},
      // Zero, not absent: an absent resource would let kubelet admit any ask for it.
      {"no healthy GPU",
       {Gpu("a", 16384, 100, false)},
       hami,
       {{"nvidia.com/gpumem", 0}, {"nvidia.com/gpucores", 0}}},
      {"no GPU", {}, hami, {{"nvidia.com/gpumem", 0}, {"nvidia.com/gpucores", 0}}},
      {"mixed cards",
       {Gpu("a", 81559, 100, true), Gpu("b", 15360, 100, true)},
       hami,
       {{"nvidia.com/gpumem", 96919}, {"nvidia.com/gpucores", 200}}},
      {"negative figures never shrink the sum",
       {Gpu("a", 16384, 100, true), Gpu("b", -5000, -100, true)},
       hami,
       {{"nvidia.com/gpumem", 16384}, {"nvidia.com/gpucores", 100}}},
      {"names from device-config.yaml",
       {Gpu("a", 1000, 100, true)},
       Names("example.com/vmem", "example.com/vcores"),
       {{"example.com/vmem", 1000}, {"example.com/vcores", 100}}},
      // 1024 GPUs of HAMi's largest memory: int64 holds the sum.
      {"no overflow",
       NodeInventory(1024, Gpu("x", 2147483647, 100, true)),
       hami,
       {{"nvidia.com/gpumem", int64_t{2147483647} * 1024}, {"nvidia.com/gpucores", 102400}}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ExtendedResourceCapacity(c.inventory, c.names), c.want) << c.what;
  }
}

TEST(CheckExtendedResourceNames, AcceptsExtendedNamesAndSaysWhyNot) {
  struct Case {
    ResourceNames names;
    const char* error;  // "" = accepted; else words the message must contain
  };
  ResourceNames same_as_count;
  same_as_count.count = "nvidia.com/gpumem";
  const Case cases[] = {
      {ResourceNames{}, ""},
      {Names("example.com/vmem", "example.com/v_cores.1"), ""},
      {Names("gpumem", "nvidia.com/gpucores"),
       "\"gpumem\" as a node extended resource: an "
       "extended resource name is <domain>/<name>"},
      {Names("nvidia.com/gpu/mem", "nvidia.com/gpucores"), "with one '/'"},
      {Names("nvidia.com/gpumem", "kubernetes.io/cores"), "the cores resource"},
      {Names("nvidia.com/gpumem", "node.kubernetes.io/cores"), "kubernetes.io domain"},
      {Names("requests.nvidia.com/gpumem", "nvidia.com/gpucores"), "quota names"},
      {Names("NVIDIA.com/gpumem", "nvidia.com/gpucores"), "lowercase DNS subdomain"},
      {Names("nvidia..com/gpumem", "nvidia.com/gpucores"), "lowercase DNS subdomain"},
      {Names("nvidia.com/-gpumem", "nvidia.com/gpucores"), "alphanumeric at both ends"},
      {Names("nvidia.com/", "nvidia.com/gpucores"), "the part after '/'"},
      {Names("nvidia.com/" + std::string(64, 'm'), "nvidia.com/gpucores"), "1-63"},
      {Names("nvidia.com/gpumem", "nvidia.com/gpumem"), "one name \"nvidia.com/gpumem\""},
      {same_as_count, "kubelet's device manager owns"},
  };
  for (const Case& c : cases) {
    Status s = CheckExtendedResourceNames(c.names);
    const std::string what = c.names.memory + " / " + c.names.cores;
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(s.ok()) << what << ": " << s.ToString();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << what;
      EXPECT_NE(s.message().find(c.error), std::string::npos) << what << ": " << s.message();
    }
  }
}

TEST(ExtendedResourceStatusPatch, TouchesOnlyTheNamedStatusEntries) {
  struct Case {
    const char* what;
    ExtendedCapacity advertise;
    std::set<std::string> withdraw;
    nlohmann::json want;
  };
  const Case cases[] = {
      {"advertise: capacity only, kubelet derives allocatable",
       {{"nvidia.com/gpumem", 32768}, {"nvidia.com/gpucores", 200}},
       {},
       {{"status",
         {{"capacity", {{"nvidia.com/gpumem", "32768"}, {"nvidia.com/gpucores", "200"}}}}}}},
      {"withdraw: from capacity and allocatable",
       {},
       {"nvidia.com/gpumem", "nvidia.com/gpucores"},
       {{"status",
         {{"capacity", {{"nvidia.com/gpumem", nullptr}, {"nvidia.com/gpucores", nullptr}}},
          {"allocatable", {{"nvidia.com/gpumem", nullptr}, {"nvidia.com/gpucores", nullptr}}}}}}},
      {"renamed: the new set, the old removed",
       {{"example.com/vmem", 10}},
       {"nvidia.com/gpumem", "example.com/vmem"},
       {{"status",
         {{"capacity", {{"nvidia.com/gpumem", nullptr}, {"example.com/vmem", "10"}}},
          {"allocatable", {{"nvidia.com/gpumem", nullptr}}}}}}},
      {"zero is advertised, not removed",
       {{"nvidia.com/gpumem", 0}},
       {},
       {{"status", {{"capacity", {{"nvidia.com/gpumem", "0"}}}}}}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ExtendedResourceStatusPatch(c.advertise, c.withdraw), c.want) << c.what;
  }
  // Applied to a node kubelet reports, it leaves every other field as it was.
  nlohmann::json node = {
      {"metadata", {{"name", "n1"}, {"annotations", {{"hami.io/node-handshake", "Reported"}}}}},
      {"spec", {{"podCIDR", "10.0.0.0/24"}}},
      {"status",
       {{"capacity", {{"cpu", "8"}, {"nvidia.com/gpu", "20"}, {"nvidia.com/gpumem", "1"}}},
        {"allocatable", {{"cpu", "7"}, {"nvidia.com/gpu", "20"}, {"nvidia.com/gpumem", "1"}}},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  nlohmann::json want = node;
  want["status"]["capacity"]["nvidia.com/gpumem"] = "32768";
  want["status"]["capacity"]["nvidia.com/gpucores"] = "200";
  node.merge_patch(ExtendedResourceStatusPatch(
      {{"nvidia.com/gpumem", 32768}, {"nvidia.com/gpucores", 200}}, {}));
  EXPECT_EQ(node, want);
  want["status"]["capacity"].erase("nvidia.com/gpumem");
  want["status"]["capacity"].erase("nvidia.com/gpucores");
  want["status"]["allocatable"].erase("nvidia.com/gpumem");
  node.merge_patch(ExtendedResourceStatusPatch({}, {"nvidia.com/gpumem", "nvidia.com/gpucores"}));
  EXPECT_EQ(node, want);
}

TEST(AdvertisedNames, RoundTripsAndToleratesSpacing) {
  struct Case {
    std::string text;
    std::set<std::string> names;
  };
  const Case cases[] = {
      {"", {}},
      {" , ,", {}},
      {"nvidia.com/gpumem", {"nvidia.com/gpumem"}},
      {" nvidia.com/gpumem ,nvidia.com/gpucores,, nvidia.com/gpumem",
       {"nvidia.com/gpucores", "nvidia.com/gpumem"}},
  };
  for (const Case& c : cases) EXPECT_EQ(DecodeAdvertisedNames(c.text), c.names) << c.text;
  EXPECT_EQ(EncodeAdvertisedNames({"nvidia.com/gpumem", "nvidia.com/gpucores"}),
            "nvidia.com/gpucores,nvidia.com/gpumem");
  EXPECT_EQ(EncodeAdvertisedNames({}), "");
  const std::set<std::string> names = {"a.io/x", "b.io/y"};
  EXPECT_EQ(DecodeAdvertisedNames(EncodeAdvertisedNames(names)), names);
}

}  // namespace
}  // namespace vgpu::codec
