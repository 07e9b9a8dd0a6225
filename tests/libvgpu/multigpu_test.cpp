// libvgpu.so with several simulated GPUs (the fake driver's VGPU_FAKE_GPUS): per-device limits,
// the device plugin's visible-device remapping, peer access and peer copies. The probe program
// (support/multigpu_probe.c) runs with the library preloaded and reports what it saw.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "process_runner.h"

namespace {

namespace fs = std::filesystem;
using vgpu::testing::RunProcess;
using vgpu::testing::RunResult;
using Env = std::map<std::string, std::string>;

constexpr uint64_t kMiB = 1ull << 20;

std::string Uuid(int index) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-00000000-0000-0000-0000-0000000000%02x", index);
  return buf;
}

// One "dev ..." line of the limits command.
struct DeviceLine {
  std::string uuid;
  uint64_t total = 0;    // cuDeviceTotalMem
  uint64_t meminfo = 0;  // cuMemGetInfo's total
  int grabbed = -1;      // blocks granted before OOM
  uint64_t region = 0;   // the region's count with the blocks held
  uint64_t nvml_total = 0;
  uint64_t nvml_used = 0;
};

class MultiGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vgpu-multigpu-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ + "/fake");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A container on a node of `gpus` simulated GPUs: libvgpu preloaded, the fake driver, a fresh
  // region, contexts and modules costing nothing (so counts are exact).
  Env BaseEnv(int gpus) const {
    return {{"LD_PRELOAD", VGPU_LIBVGPU_SO},
            {"LD_LIBRARY_PATH", VGPU_FAKE_DIR},
            {"VGPU_FAKE_STATE_DIR", dir_ + "/fake"},
            {"VGPU_FAKE_GPUS", std::to_string(gpus)},
            {"VGPU_FAKE_GPU_MEMORY", "1g"},
            {"VGPU_FAKE_CONTEXT_MEMORY", "0"},
            {"VGPU_FAKE_MODULE_MEMORY", "0"},
            {"CUDA_DEVICE_MEMORY_SHARED_CACHE", dir_ + "/region.cache"}};
  }
  static std::string Describe(const RunResult& r) {
    return "status " + std::to_string(r.status) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
  }
  static bool ExitedOk(const RunResult& r) {
    return WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0;
  }
  static std::vector<DeviceLine> Limits(const Env& env, RunResult* r) {
    *r = RunProcess({VGPU_MULTIGPU_PROBE, "limits", std::to_string(kMiB)}, env);
    std::vector<DeviceLine> out;
    const std::regex re(
        "dev (\\d+) uuid (\\S+) total (\\d+) meminfo (\\d+) grabbed (\\d+) region (\\d+) "
        "nvml_total (\\d+) nvml_used (\\d+)");
    for (auto it = std::sregex_iterator(r->out.begin(), r->out.end(), re);
         it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      DeviceLine d;
      d.uuid = m[2];
      d.total = std::stoull(m[3]);
      d.meminfo = std::stoull(m[4]);
      d.grabbed = std::stoi(m[5]);
      d.region = std::stoull(m[6]);
      d.nvml_total = std::stoull(m[7]);
      d.nvml_used = std::stoull(m[8]);
      out.push_back(d);
    }
    return out;
  }

  std::string dir_;
};

// A device line's views all agree on `limit_mib` and on the blocks granted.
void ExpectLimited(const DeviceLine& d, const std::string& uuid, uint64_t limit_mib) {
  EXPECT_EQ(d.uuid, uuid);
  EXPECT_EQ(d.grabbed, static_cast<int>(limit_mib)) << uuid;
  EXPECT_EQ(d.total, limit_mib * kMiB) << uuid;
  EXPECT_EQ(d.meminfo, limit_mib * kMiB) << uuid;
  EXPECT_EQ(d.region, limit_mib * kMiB) << uuid;
  EXPECT_EQ(d.nvml_total, limit_mib * kMiB) << uuid;
  EXPECT_EQ(d.nvml_used, limit_mib * kMiB) << uuid;
}

TEST_F(MultiGpuTest, EachDeviceRunsOutOfMemoryExactlyAtItsOwnLimit) {
  Env env = BaseEnv(2);
  env["CUDA_DEVICE_MEMORY_LIMIT_0"] = "8m";
  env["CUDA_DEVICE_MEMORY_LIMIT_1"] = "24m";
  RunResult r;
  auto devs = Limits(env, &r);
  ASSERT_TRUE(ExitedOk(r)) << Describe(r);
  ASSERT_EQ(devs.size(), 2u) << r.out;
  ExpectLimited(devs[0], Uuid(0), 8);
  ExpectLimited(devs[1], Uuid(1), 24);
}

TEST_F(MultiGpuTest, PerDeviceLimitWinsOverTheCommonOneAndUnlistedDevicesTakeTheCommonOne) {
  Env env = BaseEnv(3);
  env["CUDA_DEVICE_MEMORY_LIMIT"] = "12m";
  env["CUDA_DEVICE_MEMORY_LIMIT_1"] = "5m";
  RunResult r;
  auto devs = Limits(env, &r);
  ASSERT_TRUE(ExitedOk(r)) << Describe(r);
  ASSERT_EQ(devs.size(), 3u) << r.out;
  ExpectLimited(devs[0], Uuid(0), 12);
  ExpectLimited(devs[1], Uuid(1), 5);
  ExpectLimited(devs[2], Uuid(2), 12);
}

TEST_F(MultiGpuTest, PercentLimitsFollowEachCardsOwnMemory) {
  Env env = BaseEnv(2);
  env["VGPU_FAKE_GPU_MEMORY"] = "64m,32m";
  env["CUDA_DEVICE_MEMORY_LIMIT"] = "50%";
  RunResult r;
  auto devs = Limits(env, &r);
  ASSERT_TRUE(ExitedOk(r)) << Describe(r);
  ASSERT_EQ(devs.size(), 2u) << r.out;
  ExpectLimited(devs[0], Uuid(0), 32);
  ExpectLimited(devs[1], Uuid(1), 16);
}

// What the device plugin's Allocate gives a container granted the node's GPU 1 alone:
// NVIDIA_VISIBLE_DEVICES=<uuid of GPU 1>, CUDA_DEVICE_MEMORY_LIMIT_0 (its position in that list).
// The container runtime then shows that GPU as the only one; CUDA_VISIBLE_DEVICES=<uuid> does the
// same to the fake driver.
TEST_F(MultiGpuTest, ContainerGivenTheNodesGpuOneSeesItAsDeviceZeroWithItsLimit) {
  Env env = BaseEnv(2);
  env["NVIDIA_VISIBLE_DEVICES"] = Uuid(1);
  env["CUDA_VISIBLE_DEVICES"] = Uuid(1);
  env["CUDA_DEVICE_MEMORY_LIMIT_0"] = "6m";
  RunResult r;
  auto devs = Limits(env, &r);
  ASSERT_TRUE(ExitedOk(r)) << Describe(r);
  EXPECT_NE(r.out.find("count 1\n"), std::string::npos) << r.out;
  ASSERT_EQ(devs.size(), 1u) << r.out;
  ExpectLimited(devs[0], Uuid(1), 6);
}

// Two GPUs granted in the order GPU 2, GPU 0: limit _0 is GPU 2's, _1 GPU 0's.
TEST_F(MultiGpuTest, LimitsFollowTheOrderOfTheGrantedDevices) {
  Env env = BaseEnv(4);
  env["NVIDIA_VISIBLE_DEVICES"] = Uuid(2) + "," + Uuid(0);
  env["CUDA_VISIBLE_DEVICES"] = Uuid(2) + "," + Uuid(0);
  env["CUDA_DEVICE_MEMORY_LIMIT_0"] = "16m";
  env["CUDA_DEVICE_MEMORY_LIMIT_1"] = "4m";
  RunResult r;
  auto devs = Limits(env, &r);
  ASSERT_TRUE(ExitedOk(r)) << Describe(r);
  ASSERT_EQ(devs.size(), 2u) << r.out;
  ExpectLimited(devs[0], Uuid(2), 16);
  ExpectLimited(devs[1], Uuid(0), 4);
}

// Default fake topology: GPUs 0 and 1 NVLinked (peer access possible).
TEST_F(MultiGpuTest, PeerAccessAndPeerCopiesLeaveTheAccountingAlone) {
  Env env = BaseEnv(2);
  env["CUDA_DEVICE_MEMORY_LIMIT_0"] = "8m";
  env["CUDA_DEVICE_MEMORY_LIMIT_1"] = "8m";
  RunResult r = RunProcess({VGPU_MULTIGPU_PROBE, "peer", std::to_string(kMiB)}, env);
  ASSERT_TRUE(ExitedOk(r)) << Describe(r);
  EXPECT_NE(r.out.find("can_access 1 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peer ok\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

// GPUs 1 and 2 of the default topology are not linked: no peer access, copies still work.
TEST_F(MultiGpuTest, PeerCopiesWithoutPeerAccessLeaveTheAccountingAlone) {
  Env env = BaseEnv(4);
  env["CUDA_VISIBLE_DEVICES"] = "1,2";
  env["CUDA_DEVICE_MEMORY_LIMIT"] = "8m";
  RunResult r = RunProcess({VGPU_MULTIGPU_PROBE, "peer", std::to_string(kMiB)}, env);
  ASSERT_TRUE(ExitedOk(r)) << Describe(r);
  EXPECT_NE(r.out.find("can_access 0 0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("peer ok\n"), std::string::npos) << r.out;
}

}  // namespace
