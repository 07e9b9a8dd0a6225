#include "fake_config.h"

#include <gtest/gtest.h>

#include <map>

namespace vgpu::fake {
namespace {

TEST(ParseSize, AcceptsSuffixesInPowersOf1024) {
  struct Case {
    const char* text;
    std::optional<uint64_t> want;
  };
  const Case cases[] = {
      {"0", 0},
      {"1024", 1024},
      {"2k", 2048},
      {"2K", 2048},
      {"64m", 64ULL << 20},
      {"16g", 16ULL << 30},
      {" 1g ", 1ULL << 30},
      {"1t", 1ULL << 40},
      {"", std::nullopt},
      {"g", std::nullopt},
      {"12x", std::nullopt},
      {"-1", std::nullopt},
      {"1.5g", std::nullopt},
      {"99999999999999999g", std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(ParseSize(c.text), c.want) << c.text;
}

TEST(ParseUuid, ReadsThirtyTwoHexDigits) {
  auto bytes = ParseUuid("GPU-01234567-89ab-cdef-0123-456789ABCDEF");
  ASSERT_TRUE(bytes);
  EXPECT_EQ((*bytes)[0], 0x01);
  EXPECT_EQ((*bytes)[7], 0xef);
  EXPECT_EQ((*bytes)[15], 0xef);
  EXPECT_FALSE(ParseUuid("01234567-89ab-cdef-0123-456789abcdef"));     // no GPU- prefix
  EXPECT_FALSE(ParseUuid("GPU-01234567-89ab-cdef-0123-456789abcde"));  // 31 digits
  EXPECT_FALSE(ParseUuid("GPU-01234567-89ab-cdef-0123-456789abcdeg"));
  EXPECT_EQ(DefaultUuid(10), "GPU-00000000-0000-0000-0000-00000000000a");
}

std::map<std::string, std::string>* g_env = nullptr;
std::optional<std::string> MapEnv(const char* name) {
  auto it = g_env->find(name);
  if (it == g_env->end()) return std::nullopt;
  return it->second;
}

std::optional<FakeConfig> Load(std::map<std::string, std::string> env, std::string* error) {
  g_env = &env;
  auto cfg = LoadConfig(MapEnv, error);
  g_env = nullptr;
  return cfg;
}

TEST(LoadConfig, DefaultsDescribeOneH100) {
  std::string error;
  auto cfg = Load({}, &error);
  ASSERT_TRUE(cfg) << error;
  ASSERT_EQ(cfg->gpus.size(), 1u);
  EXPECT_EQ(cfg->gpus[0].memory_bytes, 16ULL << 30);
  EXPECT_EQ(cfg->gpus[0].sms, 132);
  EXPECT_EQ(cfg->gpus[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(cfg->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(cfg->context_memory, 64ULL << 20);
  EXPECT_EQ(cfg->module_memory, 2ULL << 20);
  EXPECT_EQ(cfg->state_dir.rfind("/tmp/vgpu-fake-", 0), 0u);
  EXPECT_EQ(cfg->timeslice_ns, 2'000'000);
  EXPECT_EQ(cfg->switch_ns, 0);
}

TEST(LoadConfig, TimeSliceAndSwitchCostInMicroseconds) {
  std::string error;
  auto cfg = Load({{"VGPU_FAKE_TIMESLICE_US", "500"}, {"VGPU_FAKE_SWITCH_US", " 25 "}}, &error);
  ASSERT_TRUE(cfg) << error;
  EXPECT_EQ(cfg->timeslice_ns, 500'000);
  EXPECT_EQ(cfg->switch_ns, 25'000);
}

TEST(LoadConfig, PerGpuListsRepeatTheirLastValue) {
  std::string error;
  auto cfg = Load({{"VGPU_FAKE_GPUS", "3"},
                   {"VGPU_FAKE_GPU_MEMORY", "1g,2g"},
                   {"VGPU_FAKE_GPU_SMS", "10"},
                   {"VGPU_FAKE_GPU_UUIDS", "GPU-11111111-1111-1111-1111-111111111111"},
                   {"VGPU_FAKE_GPU_NAME", "Tesla T4"}},
                  &error);
  ASSERT_TRUE(cfg) << error;
  ASSERT_EQ(cfg->gpus.size(), 3u);
  EXPECT_EQ(cfg->gpus[0].memory_bytes, 1ULL << 30);
  EXPECT_EQ(cfg->gpus[1].memory_bytes, 2ULL << 30);
  EXPECT_EQ(cfg->gpus[2].memory_bytes, 2ULL << 30);
  EXPECT_EQ(cfg->gpus[2].sms, 10);
  EXPECT_EQ(cfg->gpus[0].uuid, "GPU-11111111-1111-1111-1111-111111111111");
  EXPECT_EQ(cfg->gpus[1].uuid, "GPU-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(cfg->name, "Tesla T4");
}

TEST(ParseTopology, DefaultAndDescribedLinks) {
  std::string error;
  auto def = ParseTopology(DefaultTopology(5), 5, &error);
  ASSERT_TRUE(def) << error;
  EXPECT_EQ((*def)[0][1], (GpuLink{PcieLevel::kNode, 4}));
  EXPECT_EQ((*def)[3][2], (GpuLink{PcieLevel::kNode, 4}));
  EXPECT_EQ((*def)[1][2], (GpuLink{PcieLevel::kSystem, 0}));
  EXPECT_EQ((*def)[4][3], (GpuLink{PcieLevel::kSystem, 0}));
  EXPECT_TRUE(PeerCapable((*def)[0][1]));
  EXPECT_FALSE(PeerCapable((*def)[1][2]));

  auto t = ParseTopology("2-0=nv2, 1-2=single,*=hostbridge", 3, &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ((*t)[0][2], (GpuLink{PcieLevel::kHostBridge, 2}));  // level from '*'
  EXPECT_EQ((*t)[2][1], (GpuLink{PcieLevel::kSingle, 0}));
  EXPECT_EQ((*t)[0][1], (GpuLink{PcieLevel::kHostBridge, 0}));
  EXPECT_TRUE(PeerCapable((*t)[0][1]));  // PCIe up to a host bridge
  auto none = ParseTopology("", 2, &error);
  ASSERT_TRUE(none) << error;
  EXPECT_EQ((*none)[0][1], (GpuLink{PcieLevel::kSystem, 0}));

  for (const char* bad :
       {"0-1", "0-1=", "0-0=node", "0-2=node", "0-1=node,1-0=node", "0-1=nv19", "0-1=nv0",
        "0-1=node+system", "0-1=nv1+nv2", "*=node,*=node", "x-1=node", "0-1=pcie"}) {
    error.clear();
    EXPECT_FALSE(ParseTopology(bad, 2, &error)) << bad;
    EXPECT_NE(error.find("VGPU_FAKE_TOPOLOGY"), std::string::npos) << bad << ": " << error;
  }
  error.clear();
  EXPECT_FALSE(Load({{"VGPU_FAKE_GPUS", "2"}, {"VGPU_FAKE_TOPOLOGY", "0-3=node"}}, &error));
  EXPECT_NE(error.find("beyond the 2"), std::string::npos) << error;
}

TEST(LoadConfig, RejectsBadValuesWithTheVariableName) {
  const std::pair<const char*, const char*> bad[] = {
      {"VGPU_FAKE_GPUS", "many"},
      {"VGPU_FAKE_GPUS", "17"},
      {"VGPU_FAKE_GPU_MEMORY", "lots"},
      {"VGPU_FAKE_GPU_MEMORY", "0"},
      {"VGPU_FAKE_GPU_SMS", "0"},
      {"VGPU_FAKE_GPU_UUIDS", "GPU-xyz"},
      {"VGPU_FAKE_CONTEXT_MEMORY", "big"},
      {"VGPU_FAKE_MODULE_MEMORY", "-2m"},
      {"VGPU_FAKE_TIMESLICE_US", "0"},
      {"VGPU_FAKE_TIMESLICE_US", "2ms"},
      {"VGPU_FAKE_TIMESLICE_US", "10000001"},
      {"VGPU_FAKE_SWITCH_US", "-1"},
  };
  for (const auto& [name, value] : bad) {
    std::string error;
    EXPECT_FALSE(Load({{name, value}}, &error)) << name << "=" << value;
    EXPECT_NE(error.find(name), std::string::npos) << error;
  }
  std::string error;
  EXPECT_FALSE(
      Load({{"VGPU_FAKE_GPUS", "2"},
            {"VGPU_FAKE_GPU_UUIDS",
             "GPU-11111111-1111-1111-1111-111111111111,GPU-11111111-1111-1111-1111-111111111111"}},
           &error));
  EXPECT_NE(error.find("duplicate"), std::string::npos) << error;
}

TEST(VisibleDevices, FollowsCudaVisibleDevicesRules) {
  std::string error;
  auto cfg =
      Load({{"VGPU_FAKE_GPUS", "4"},
            {"VGPU_FAKE_GPU_UUIDS",
             "GPU-aaaaaaaa-0000-0000-0000-000000000000,GPU-bbbbbbbb-0000-0000-0000-000000000000,"
             "GPU-abcdef00-0000-0000-0000-000000000000,GPU-cccccccc-0000-0000-0000-000000000000"}},
           &error);
  ASSERT_TRUE(cfg) << error;
  struct Case {
    std::optional<std::string> env;
    std::vector<int> want;
  };
  const Case cases[] = {
      {std::nullopt, {0, 1, 2, 3}},
      {"", {}},
      {"2,0", {2, 0}},
      {"1,7,2", {1}},     // stops at the first invalid index
      {"0,0", {0}},       // and at a repeat
      {"GPU-bbbb", {1}},  // unique UUID prefix
      {"GPU-a", {}},      // ambiguous prefix
      {"GPU-cccccccc-0000-0000-0000-000000000000,3", {3}},
      {"3,GPU-aaaaaaaa", {3, 0}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(VisibleDevices(c.env, *cfg), c.want) << c.env.value_or("<unset>");
  }
}

}  // namespace
}  // namespace vgpu::fake
