#include "sm/sm_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace vgpu::sm {
namespace {

TEST(ParseSmPercent, Table) {
  struct Case {
    const char* text;
    int32_t percent;
    bool malformed;
  };
  const Case cases[] = {
      {nullptr, 0, false}, {"", 0, false},    {"0", 0, false},   {"1", 1, false},
      {"30", 30, false},   {"99", 99, false}, {"100", 0, false}, {"250", 0, false},
      {"-5", 0, true},     {"abc", 0, true},  {"30%", 0, true},  {"3.5", 0, true},
  };
  for (const Case& c : cases) {
    Parsed<int32_t> got = ParseSmPercent(c.text);
    EXPECT_EQ(got.value, c.percent) << (c.text ? c.text : "(null)");
    EXPECT_EQ(got.malformed, c.malformed) << (c.text ? c.text : "(null)");
  }
}

TEST(ParsePolicy, Table) {
  struct Case {
    const char* text;
    Policy policy;
    bool malformed;
  };
  const Case cases[] = {
      {nullptr, Policy::kDefault, false},   {"default", Policy::kDefault, false},
      {"force", Policy::kForce, false},     {"FORCE", Policy::kForce, false},
      {"disable", Policy::kDisable, false}, {"off", Policy::kDefault, true},
  };
  for (const Case& c : cases) {
    Parsed<Policy> got = ParsePolicy(c.text);
    EXPECT_EQ(got.value, c.policy) << (c.text ? c.text : "(null)");
    EXPECT_EQ(got.malformed, c.malformed) << (c.text ? c.text : "(null)");
  }
}

TEST(ParsePriority, Table) {
  EXPECT_EQ(ParsePriority(nullptr).value, Priority::kLow);
  EXPECT_EQ(ParsePriority("0").value, Priority::kHigh);
  EXPECT_EQ(ParsePriority("1").value, Priority::kLow);
  EXPECT_TRUE(ParsePriority("2").malformed);
  EXPECT_EQ(ParsePriority("2").value, Priority::kLow);
}

std::map<std::string, std::string>* g_env = nullptr;
const char* FakeGetEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

TEST(ParseAloneBurstMs, Table) {
  struct Case {
    const char* text;
    int32_t want;
    bool malformed;
  };
  const Case cases[] = {
      {nullptr, 300, false}, {"", 300, false},      {"0", 0, false},
      {"50", 50, false},     {"1000", 1000, false}, {"1001", 300, true},
      {"-1", 300, true},     {"20ms", 300, true},   {"abc", 300, true},
  };
  for (const Case& c : cases) {
    Parsed<int32_t> got = ParseAloneBurstMs(c.text, 300);
    EXPECT_EQ(got.value, c.want) << (c.text ? c.text : "(unset)");
    EXPECT_EQ(got.malformed, c.malformed) << (c.text ? c.text : "(unset)");
  }
}

TEST(ParseSharedCreditMs, Table) {
  struct Case {
    const char* text;
    int32_t want;
    bool malformed;
  };
  const Case cases[] = {
      {nullptr, 20, false}, {"", 20, false},   {"1", 1, false},   {"60", 60, false},
      {"200", 200, false},  {"0", 20, true},   {"201", 20, true}, {"-5", 20, true},
      {"50ms", 20, true},   {"abc", 20, true},
  };
  for (const Case& c : cases) {
    Parsed<int32_t> got = ParseSharedCreditMs(c.text, 20);
    EXPECT_EQ(got.value, c.want) << (c.text ? c.text : "(unset)");
    EXPECT_EQ(got.malformed, c.malformed) << (c.text ? c.text : "(unset)");
  }
}

TEST(SettingsForDevice, PerDeviceWinsAndPolicyApplies) {
  struct Case {
    std::map<std::string, std::string> env;
    int index;
    int32_t percent;
  };
  const Case cases[] = {
      {{}, 0, 0},
      {{{"CUDA_DEVICE_SM_LIMIT", "30"}}, 0, 30},
      {{{"CUDA_DEVICE_SM_LIMIT", "30"}}, 3, 30},
      {{{"CUDA_DEVICE_SM_LIMIT", "30"}, {"CUDA_DEVICE_SM_LIMIT_1", "70"}}, 1, 70},
      {{{"CUDA_DEVICE_SM_LIMIT", "30"}, {"CUDA_DEVICE_SM_LIMIT_1", "0"}}, 1, 0},
      {{{"CUDA_DEVICE_SM_LIMIT", "30"}, {"CUDA_DEVICE_SM_LIMIT_1", "70"}}, 0, 30},
      {{{"CUDA_DEVICE_SM_LIMIT", "30"}, {"GPU_CORE_UTILIZATION_POLICY", "disable"}}, 0, 0},
      {{{"CUDA_DEVICE_SM_LIMIT", "30"}, {"GPU_CORE_UTILIZATION_POLICY", "force"}}, 0, 30},
      {{{"CUDA_DEVICE_SM_LIMIT", "100"}}, 0, 0},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::string> env = c.env;
    g_env = &env;
    EXPECT_EQ(SettingsForDevice(FakeGetEnv, c.index).percent, c.percent) << "index " << c.index;
  }
  g_env = nullptr;
}

TEST(AnyDeviceLimited, Table) {
  struct Case {
    std::map<std::string, std::string> env;
    bool want;
  };
  const Case cases[] = {
      {{}, false},
      {{{"CUDA_DEVICE_SM_LIMIT", "100"}}, false},
      {{{"CUDA_DEVICE_SM_LIMIT_2", "40"}}, true},
      {{{"CUDA_DEVICE_SM_LIMIT", "40"}, {"GPU_CORE_UTILIZATION_POLICY", "disable"}}, false},
      {{{"CUDA_DEVICE_SM_LIMIT", "40"}, {"GPU_CORE_UTILIZATION_POLICY", "default"}}, true},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::string> env = c.env;
    g_env = &env;
    EXPECT_EQ(AnyDeviceLimited(FakeGetEnv, 16), c.want);
  }
  g_env = nullptr;
}

TEST(SettingsForDevice, ReportsPriorityAndMalformedInput) {
  std::map<std::string, std::string> env = {{"CUDA_DEVICE_SM_LIMIT", "x"},
                                            {"CUDA_TASK_PRIORITY", "0"}};
  g_env = &env;
  DeviceSettings s = SettingsForDevice(FakeGetEnv, 0);
  EXPECT_EQ(s.percent, 0);
  EXPECT_TRUE(s.malformed);
  EXPECT_EQ(s.priority, Priority::kHigh);
  g_env = nullptr;
}

}  // namespace
}  // namespace vgpu::sm
