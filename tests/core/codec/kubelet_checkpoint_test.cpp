#include "core/codec/kubelet_checkpoint.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

// Shaped as kubelet 1.20.2 wrote it on the e2e cluster (AllocResp shortened: base64 of "hi").
constexpr std::string_view kV120 = R"({"Data":{"PodDeviceEntries":[
  {"PodUID":"d219","ContainerName":"main","ResourceName":"nvidia.com/gpu",
   "DeviceIDs":{"0":["GPU-fake-1-9"],"1":["GPU-fake-1-3"]},"AllocResp":"aGk="},
  {"PodUID":"35b6","ContainerName":"side","ResourceName":"nvidia.com/gpu",
   "DeviceIDs":{"0":["GPU-fake-0-8"]},"AllocResp":""}],
  "RegisteredDevices":{"nvidia.com/gpu":["GPU-fake-0-8"]}},"Checksum":1234})";

TEST(DecodeKubeletCheckpoint, ReadsKubelet120Entries) {
  auto got = DecodeKubeletCheckpoint(kV120);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].pod_uid, "d219");
  EXPECT_EQ((*got)[0].container, "main");
  EXPECT_EQ((*got)[0].resource, "nvidia.com/gpu");
  EXPECT_EQ((*got)[0].device_ids, (std::vector<std::string>{"GPU-fake-1-9", "GPU-fake-1-3"}));
  EXPECT_EQ((*got)[0].alloc_resp, "hi");
  EXPECT_EQ((*got)[1].container, "side");
  EXPECT_EQ((*got)[1].alloc_resp, "");
}

TEST(DecodeKubeletCheckpoint, ReadsThePre120ListForm) {
  auto got = DecodeKubeletCheckpoint(
      R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r",)"
      R"("DeviceIDs":["a","b"],"AllocResp":"aGk="}]},"Checksum":1})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].device_ids, (std::vector<std::string>{"a", "b"}));
}

TEST(DecodeKubeletCheckpoint, NoAllocationsIsEmpty) {
  for (std::string_view text : {R"({"Data":{"PodDeviceEntries":null,"RegisteredDevices":{}}})",
                                R"({"Data":{"RegisteredDevices":{}}})"}) {
    auto got = DecodeKubeletCheckpoint(text);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(got->empty());
  }
}

TEST(DecodeKubeletCheckpoint, RejectsWhatKubeletDoesNotWrite) {
  struct Case {
    std::string_view text;
    const char* why;
  };
  const Case cases[] = {
      {"", "not a JSON object"},
      {"[1]", "not a JSON object"},
      {R"({"Checksum":1})", "no \"Data\""},
      {R"({"Data":{"PodDeviceEntries":{}}})", "not a list"},
      {R"({"Data":{"PodDeviceEntries":[7]}})", "PodDeviceEntries[0] is not an object"},
      {R"({"Data":{"PodDeviceEntries":[{"ContainerName":"c"}]}})", "lacks PodUID"},
      {R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ResourceName":"r","DeviceIDs":5}]}})",
       "neither a list nor a map"},
      {R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ResourceName":"r","DeviceIDs":{"0":[1]}}]}})",
       "NUMA node 0"},
      {R"({"Data":{"PodDeviceEntries":[{"PodUID":"u","ResourceName":"r","AllocResp":"@@@@"}]}})",
       "AllocResp"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.text));
    auto got = DecodeKubeletCheckpoint(c.text);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.status().ToString().find(c.why), std::string::npos) << got.status().ToString();
  }
}

}  // namespace
}  // namespace vgpu::codec
