#include "env_config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "mem_arith.h"
#include "vgpu/env_contract.h"

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

struct SizeCase {
  const char* text;
  int rc;
  uint64_t value;
};

TEST(ParseSize, Table) {
  const SizeCase cases[] = {
      {"0", 0, 0},
      {"4096", 0, 4096},
      {"4k", 0, 4096},
      {"4096m", 0, 4096 * kMiB},
      {"4G", 0, 4 * kGiB},
      {"4Gi", 0, 4 * kGiB},
      {"4GiB", 0, 4 * kGiB},
      {" 3m ", 0, 3 * kMiB},
      {"1t", 0, 1ull << 40},
      {"", -1, 0},
      {"m", -1, 0},
      {"-1", -1, 0},
      {"12x", -1, 0},
      {"4 g", -1, 0},
      {"99999999999999999999", -1, 0},
      {"17179869184g", -1, 0},
  };
  for (const auto& c : cases) {
    uint64_t v = 12345;
    EXPECT_EQ(vgpu_parse_size(c.text, &v), c.rc) << c.text;
    if (c.rc == 0) {
      EXPECT_EQ(v, c.value) << c.text;
    }
  }
  uint64_t v = 0;
  EXPECT_EQ(vgpu_parse_size(nullptr, &v), -1);
}

TEST(ParseMemLimit, PercentOrSize) {
  struct Case {
    const char* text;
    int rc;
    uint64_t bytes;
    uint32_t percent;
  } const cases[] = {
      {"50%", 0, 0, 50},  {"100%", 0, 0, 100}, {"1%", 0, 0, 1}, {"0%", 0, 0, 0},
      {"101%", -1, 0, 0}, {"5x%", -1, 0, 0},   {"%", -1, 0, 0}, {"2g", 0, 2 * kGiB, 0},
      {"-1%", -1, 0, 0},  {"0.5%", -1, 0, 0},  {"0", 0, 0, 0},  {"0m", 0, 0, 0},
  };
  for (const auto& c : cases) {
    uint64_t bytes = 7;
    uint32_t percent = 7;
    EXPECT_EQ(vgpu_parse_mem_limit(c.text, &bytes, &percent), c.rc) << c.text;
    if (c.rc == 0) {
      EXPECT_EQ(bytes, c.bytes) << c.text;
      EXPECT_EQ(percent, c.percent) << c.text;
    }
  }
}

TEST(ParseBool, Table) {
  EXPECT_EQ(vgpu_parse_bool("true"), 1);
  EXPECT_EQ(vgpu_parse_bool("TRUE"), 1);
  EXPECT_EQ(vgpu_parse_bool("1"), 1);
  EXPECT_EQ(vgpu_parse_bool("on"), 1);
  EXPECT_EQ(vgpu_parse_bool("false"), 0);
  EXPECT_EQ(vgpu_parse_bool("0"), 0);
  EXPECT_EQ(vgpu_parse_bool(""), 0);
  EXPECT_EQ(vgpu_parse_bool(nullptr), 0);
}

using Env = std::map<std::string, std::string>;
const char* Lookup(const char* name, void* ctx) {
  auto* env = static_cast<Env*>(ctx);
  auto it = env->find(name);
  return it == env->end() ? nullptr : it->second.c_str();
}

TEST(ReadSettings, IndexedWinsOverPlain) {
  Env env{{"CUDA_DEVICE_MEMORY_LIMIT", "1g"},
          {"CUDA_DEVICE_MEMORY_LIMIT_1", "4096m"},
          {"CUDA_DEVICE_MEMORY_LIMIT_2", "25%"},
          {"CUDA_DEVICE_SM_LIMIT", "30"},
          {"CUDA_DEVICE_SM_LIMIT_1", "100"},
          {"CUDA_DEVICE_SM_LIMIT_2", ""}};  // empty: the plain value holds
  vgpu_settings s;
  char err[256];
  ASSERT_EQ(vgpu_read_settings(Lookup, &env, 3, &s, err, sizeof(err)), 0) << err;
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.mem_limited[0] + s.mem_limited[1] + s.mem_limited[2], 3);
  EXPECT_EQ(s.mem_bytes[0], kGiB);
  EXPECT_EQ(s.mem_bytes[1], 4096 * kMiB);
  EXPECT_EQ(s.mem_bytes[2], 0u);
  EXPECT_EQ(s.mem_percent[2], 25u);
  EXPECT_EQ(s.sm_percent[0], 30u);
  EXPECT_EQ(s.sm_percent[1], 0u);  // >= 100 means unlimited
  EXPECT_EQ(s.sm_percent[2], 30u);
}

TEST(ReadSettings, SmPercentTable) {
  struct Case {
    const char* value;
    uint32_t want;
    bool malformed;
  } const cases[] = {
      // 0 and >= 100 are HAMi's "unlimited" (100 is the whole card); malformed values fail closed
      // at the smallest limit, never unlimited.
      {"30", 30, false}, {" 45 ", 45, false}, {"0", 0, false},  {"99", 99, false},
      {"100", 0, false}, {"250", 0, false},   {"30k", 1, true}, {"30%", 1, true},
      {"-5", 1, true},   {"abc", 1, true},    {"3 0", 1, true}, {"99999999999999", 0, false},
      {"2.5", 1, true},
  };
  for (const Case& c : cases) {
    Env env{{"CUDA_DEVICE_SM_LIMIT", c.value}};
    vgpu_settings s;
    char err[256];
    const int rc = vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err));
    EXPECT_EQ(s.sm_percent[0], c.want) << c.value;
    EXPECT_EQ(rc, c.malformed ? -1 : 0) << c.value;
    if (c.malformed) {
      EXPECT_NE(std::string(err).find("CUDA_DEVICE_SM_LIMIT"), std::string::npos) << err;
      EXPECT_NE(std::string(err).find(c.value), std::string::npos) << err;
    }
  }
}

TEST(ReadSettings, PolicyPriorityAndExtensions) {
  struct Case {
    Env env;
    int32_t policy;
    int32_t priority;
    uint32_t sm0;
    int rc;
  } const cases[] = {
      {{}, VGPU_POLICY_DEFAULT, 1, 0, 0},
      {{{"GPU_CORE_UTILIZATION_POLICY", "FORCE"}, {"CUDA_DEVICE_SM_LIMIT", "20"}},
       VGPU_POLICY_FORCE,
       1,
       20,
       0},
      {{{"GPU_CORE_UTILIZATION_POLICY", "disable"}, {"CUDA_DEVICE_SM_LIMIT", "20"}},
       VGPU_POLICY_DISABLE,
       1,
       0,
       0},  // disable: never limited
      {{{"GPU_CORE_UTILIZATION_POLICY", "sometimes"}}, VGPU_POLICY_DEFAULT, 1, 0, -1},
      {{{"CUDA_TASK_PRIORITY", "0"}}, VGPU_POLICY_DEFAULT, 0, 0, 0},
      {{{"CUDA_TASK_PRIORITY", "high"}}, VGPU_POLICY_DEFAULT, 1, 0, -1},
  };
  for (const Case& c : cases) {
    vgpu_settings s;
    char err[256];
    Env env = c.env;
    EXPECT_EQ(vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err)), c.rc) << err;
    EXPECT_EQ(s.core_policy, c.policy);
    EXPECT_EQ(s.priority, c.priority);
    EXPECT_EQ(s.sm_percent[0], c.sm0);
  }
  Env env{{"VGPU_SM_STATS", "2"},
          {"VGPU_SM_PEER_DIR", "/run/locks"},
          {"VGPU_CUPTI_LIBRARY", "off"},
          {"CUDA_DEVICE_MEMORY_SHARED_CACHE", "/usr/local/vgpu/x.cache"},
          {"ACTIVE_OOM_KILLER", "true"}};
  vgpu_settings s;
  char err[256];
  ASSERT_EQ(vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err)), 0) << err;
  EXPECT_EQ(s.sm_stats, 2);
  EXPECT_STREQ(s.lock_dir, "/run/locks");
  EXPECT_STREQ(s.cupti_library, "off");
  EXPECT_EQ(s.shared_cache_set, 1);
  EXPECT_STREQ(s.shared_cache, "/usr/local/vgpu/x.cache");
  EXPECT_EQ(s.oom_killer, 1);
  Env empty;
  ASSERT_EQ(vgpu_read_settings(Lookup, &empty, 1, &s, err, sizeof(err)), 0);
  EXPECT_STREQ(s.lock_dir, "/tmp/vgpulock");
  EXPECT_STREQ(s.shared_cache, "/tmp/cudevshr.cache");
  EXPECT_EQ(s.shared_cache_set, 0);
  EXPECT_EQ(s.sm_stats, 0);
}

// The alone pause: 100 ms unless set (docs/sm-limit.md, docs/operations.md; issue 45 found the
// contract header saying 1000), 0..1000 accepted, anything else the default with one message.
TEST(ReadSettings, AlonePauseTable) {
  struct Case {
    const char* value;  // nullptr: unset
    int32_t want;
    bool malformed;
  } const cases[] = {
      {nullptr, 100, false}, {"0", 0, false},   {"100", 100, false}, {"1000", 1000, false},
      {"1001", 100, true},   {"-1", 100, true}, {"5s", 100, true},   {"lots", 100, true},
  };
  EXPECT_EQ(VGPU_SM_ALONE_PAUSE_DEFAULT_MS, 100);
  for (const Case& c : cases) {
    Env env;
    if (c.value != nullptr) env["VGPU_SM_ALONE_PAUSE_MS"] = c.value;
    vgpu_settings s;
    char err[256];
    const int rc = vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err));
    const std::string what = c.value != nullptr ? c.value : "(unset)";
    EXPECT_EQ(s.sm_alone_pause_ms, c.want) << what;
    EXPECT_EQ(rc, c.malformed ? -1 : 0) << what;
    if (c.malformed) {
      EXPECT_NE(std::string(err).find("expected 0-1000 ms); using 100"), std::string::npos) << err;
    }
  }
}

// VGPU_SHARING_MODE: mps turns the time-slice limiter off (MPS partitions the SMs) but keeps the
// percent recorded; anything unknown keeps time-slice and is reported (never a lifted limit).
TEST(ReadSettings, SharingModeTable) {
  struct Case {
    const char* value;  // nullptr: unset
    int want_mps;
    bool malformed;
  } const cases[] = {
      {nullptr, 0, false}, {"time-slice", 0, false}, {"mps", 1, false}, {"MPS", 1, false},
      {"", 0, false},      {"mps ", 0, true},        {"mig", 0, true},  {"hami-core", 0, true},
  };
  for (const Case& c : cases) {
    Env env{{"CUDA_DEVICE_SM_LIMIT", "40"}};
    if (c.value != nullptr) env["VGPU_SHARING_MODE"] = c.value;
    vgpu_settings s;
    char err[256];
    const int rc = vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err));
    const std::string what = c.value != nullptr ? c.value : "(unset)";
    EXPECT_EQ(s.sharing_mps, c.want_mps) << what;
    EXPECT_EQ(s.sm_percent[0], 40u) << what;
    EXPECT_EQ(rc, c.malformed ? -1 : 0) << what;
    if (c.malformed) {
      EXPECT_NE(std::string(err).find("enforced by time-slicing"), std::string::npos) << err;
    }
  }
}

// Issue 42, item 2: `nvidia.com/gpumem-percentage: "0"` reached libvgpu as
// CUDA_DEVICE_MEMORY_LIMIT_0=0m, read as "unlimited" (15 GiB taken of a 16 GiB card). An explicit 0
// is a limit of 0 bytes, and so is every value that cannot be read; only unset (or empty) is none.
TEST(ReadSettings, ExplicitZeroAndMalformedLimitsAreZeroBytesNeverUnlimited) {
  struct Case {
    const char* value;  // nullptr: unset
    bool malformed;
    uint64_t want;  // effective limit on a 16 GiB card
  } const cases[] = {
      {nullptr, false, VGPU_MEM_UNLIMITED},
      {"", false, VGPU_MEM_UNLIMITED},  // empty is unset
      {"0", false, 0},
      {"0m", false, 0},
      {"0g", false, 0},
      {"0%", false, 0},
      {" 0 ", false, 0},
      {"1m", false, kMiB},
      {"50%", false, 8 * kGiB},
      {"100t", false, 100ull << 40},  // above the card: the card (vgpu_fake_total)
      {"lots", true, 0},
      {"-1", true, 0},
      {"-512m", true, 0},
      {"1.5g", true, 0},
      {"101%", true, 0},
      {"99999999999999999999", true, 0},  // overflows
      {"17179869184g", true, 0},          // overflows once scaled
      {"4 g", true, 0},
      {"0x100", true, 0},
      {"1e9", true, 0},
  };
  for (const Case& c : cases) {
    Env env;
    if (c.value != nullptr) env["CUDA_DEVICE_MEMORY_LIMIT_0"] = c.value;
    vgpu_settings s;
    char err[512];
    EXPECT_EQ(vgpu_read_settings(Lookup, &env, 2, &s, err, sizeof(err)), c.malformed ? -1 : 0)
        << (c.value ? c.value : "(unset)") << " " << err;
    EXPECT_EQ(vgpu_effective_limit(&s, 0, 16 * kGiB), c.want) << (c.value ? c.value : "(unset)");
    EXPECT_EQ(vgpu_effective_limit(&s, 1, 16 * kGiB), VGPU_MEM_UNLIMITED);  // device 1: unset
    if (c.malformed) {
      EXPECT_NE(std::string(err).find("CUDA_DEVICE_MEMORY_LIMIT"), std::string::npos) << err;
      EXPECT_NE(std::string(err).find(c.value), std::string::npos) << err;
      EXPECT_NE(std::string(err).find("refused"), std::string::npos) << err;
    }
  }
}

// A path cut to fit libvgpu's buffer would name another file (another container's region, say):
// it is refused, never used cut (issue 42; found by the `vgpu run` helper).
TEST(ReadSettings, PathsTooLongAreRefusedNotCut) {
  const std::string long_path = "/tmp/" + std::string(600, 'a');
  Env env{{"CUDA_DEVICE_MEMORY_SHARED_CACHE", long_path}};
  vgpu_settings s;
  char err[512];
  EXPECT_EQ(vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err)), -1);
  EXPECT_EQ(s.shared_cache_too_long, 1);
  EXPECT_NE(std::string(err).find("longer than libvgpu keeps"), std::string::npos) << err;
  env = {{"VGPU_SM_PEER_DIR", long_path}};
  EXPECT_EQ(vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err)), -1);
  EXPECT_EQ(s.shared_cache_too_long, 0);
  EXPECT_STREQ(s.lock_dir, "");
  env = {{"VGPU_CUPTI_LIBRARY", long_path}};
  EXPECT_EQ(vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err)), -1);
  EXPECT_STREQ(s.cupti_library, "off");
  env = {{"CUDA_DEVICE_MEMORY_SHARED_CACHE", "/tmp/" + std::string(506, 'b')}};  // 511: fits
  EXPECT_EQ(vgpu_read_settings(Lookup, &env, 1, &s, err, sizeof(err)), 0) << err;
  EXPECT_EQ(s.shared_cache_too_long, 0);
}

TEST(ReadSettings, ClampsDeviceCount) {
  Env env;
  vgpu_settings s;
  char err[8];
  EXPECT_EQ(vgpu_read_settings(Lookup, &env, 1000, &s, err, sizeof(err)), 0);
  EXPECT_EQ(s.count, VGPU_REGION_MAX_DEVICES);
}

TEST(EffectiveLimit, PercentOfPhysical) {
  Env env{{"CUDA_DEVICE_MEMORY_LIMIT_0", "5"},
          {"CUDA_DEVICE_MEMORY_LIMIT_1", "50%"},
          {"CUDA_DEVICE_MEMORY_LIMIT_2", "100%"},
          {"CUDA_DEVICE_MEMORY_LIMIT_3", "18446744073709551615"}};
  vgpu_settings s;
  char err[256];
  ASSERT_EQ(vgpu_read_settings(Lookup, &env, 5, &s, err, sizeof(err)), 0) << err;
  EXPECT_EQ(vgpu_effective_limit(&s, 0, 100), 5u);
  EXPECT_EQ(vgpu_effective_limit(&s, 1, 80 * kGiB), 40 * kGiB);
  EXPECT_EQ(vgpu_effective_limit(&s, 2, 81559 * kMiB), 81559 * kMiB);
  EXPECT_EQ(vgpu_effective_limit(&s, 3, 100), VGPU_MEM_UNLIMITED - 1);  // a limit, however large
  EXPECT_EQ(vgpu_effective_limit(&s, 4, 100), VGPU_MEM_UNLIMITED);      // unset
  EXPECT_EQ(vgpu_effective_limit(&s, -1, 100), VGPU_MEM_UNLIMITED);
  EXPECT_EQ(vgpu_effective_limit(&s, 99, 100), VGPU_MEM_UNLIMITED);
}

TEST(VisibleDevices, Tokens) {
  char tokens[VGPU_REGION_MAX_DEVICES][VGPU_REGION_UUID_LEN];
  EXPECT_EQ(vgpu_split_visible_devices(nullptr, tokens, VGPU_REGION_MAX_DEVICES), -1);
  EXPECT_EQ(vgpu_split_visible_devices("", tokens, VGPU_REGION_MAX_DEVICES), 0);
  ASSERT_EQ(vgpu_split_visible_devices("2, 0", tokens, VGPU_REGION_MAX_DEVICES), 2);
  EXPECT_STREQ(tokens[0], "2");
  EXPECT_STREQ(tokens[1], "0");
  ASSERT_EQ(vgpu_split_visible_devices("GPU-abc,MIG-def", tokens, VGPU_REGION_MAX_DEVICES), 2);
  EXPECT_STREQ(tokens[0], "GPU-abc");
  EXPECT_STREQ(tokens[1], "MIG-def");
  // CUDA stops at the first invalid entry.
  EXPECT_EQ(vgpu_split_visible_devices("1,x,2", tokens, VGPU_REGION_MAX_DEVICES), 1);
  EXPECT_EQ(vgpu_split_visible_devices("0,1,2", tokens, 2), 2);
}

struct ViewCase {
  uint64_t limit, physical, real_free, used, want_free, want_total;
};

TEST(FakedViews, NeverUnderflow) {
  const ViewCase cases[] = {
      // unlimited: the card's own numbers
      {VGPU_MEM_UNLIMITED, 80 * kGiB, 70 * kGiB, 1 * kGiB, 70 * kGiB, 80 * kGiB},
      // a limit of 0 bytes: nothing total, nothing free
      {0, 80 * kGiB, 70 * kGiB, 0, 0, 0},
      // limited, plenty free on the card
      {4 * kGiB, 80 * kGiB, 70 * kGiB, 1 * kGiB, 3 * kGiB, 4 * kGiB},
      // limited, the card is nearly full because of others
      {4 * kGiB, 80 * kGiB, 1 * kGiB, 1 * kGiB, 1 * kGiB, 4 * kGiB},
      // usage above the limit (drift): free is 0, never negative
      {4 * kGiB, 80 * kGiB, 60 * kGiB, 5 * kGiB, 0, 4 * kGiB},
      // limit above physical: physical wins
      {100 * kGiB, 80 * kGiB, 80 * kGiB, 0, 80 * kGiB, 80 * kGiB},
      // exactly at the limit
      {4 * kGiB, 80 * kGiB, 60 * kGiB, 4 * kGiB, 0, 4 * kGiB},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(vgpu_fake_free(c.limit, c.physical, c.real_free, c.used), c.want_free)
        << c.limit << " " << c.used;
    EXPECT_EQ(vgpu_fake_total(c.limit, c.physical), c.want_total);
  }
}

TEST(Fits, Boundary) {
  EXPECT_TRUE(vgpu_fits(0, 100, 100));
  EXPECT_FALSE(vgpu_fits(1, 100, 100));
  EXPECT_TRUE(vgpu_fits(99, 1, 100));
  EXPECT_FALSE(vgpu_fits(0, 101, 100));
  EXPECT_TRUE(vgpu_fits(1000, 1000, VGPU_MEM_UNLIMITED));             // unlimited
  EXPECT_FALSE(vgpu_fits(UINT64_MAX - 1, 1000, VGPU_MEM_UNLIMITED));  // the total cannot wrap
  EXPECT_FALSE(vgpu_fits(10, UINT64_MAX, 100));                       // no overflow wrap
  EXPECT_FALSE(vgpu_fits(0, 1, 0));                                   // 0 bytes: nothing fits
  EXPECT_TRUE(vgpu_fits(0, 0, 0));
}

}  // namespace
