#include "core/allocate/container_response.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace vgpu::allocate {
namespace {

bool HasMount(const ContainerResponse& r, const MountSpec& m) {
  return std::find(r.mounts.begin(), r.mounts.end(), m) != r.mounts.end();
}

TEST(BuildContainerResponse, TwoDevicesDefaultSettings) {
  ResponseSettings s;
  s.libvgpu_version = "0.1.0";
  ContainerView c{"app", false, {}};
  auto got =
      BuildContainerResponse({{"GPU-a", 3000, 30}, {"GPU-b", 5000, 0}}, "uid-1", c, "abc", s);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const ContainerResponse& r = *got;
  const std::map<std::string, std::string> want_env = {
      {"VGPU_SHARING_MODE", "time-slice"},
      {"NVIDIA_VISIBLE_DEVICES", "GPU-a,GPU-b"},
      {"CUDA_DEVICE_MEMORY_LIMIT_0", "3000m"},
      {"CUDA_DEVICE_MEMORY_LIMIT_1", "5000m"},
      {"CUDA_DEVICE_SM_LIMIT", "30"},
      {"CUDA_DEVICE_SM_LIMIT_0", "30"},
      {"CUDA_DEVICE_SM_LIMIT_1", "0"},
      {"CUDA_DEVICE_MEMORY_SHARED_CACHE", "/usr/local/vgpu/abc.cache"},
  };
  EXPECT_EQ(r.envs, want_env);
  const std::vector<MountSpec> want_mounts = {
      {"/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/libvgpu.so.0.1.0", true},
      {"/usr/local/vgpu", "/usr/local/vgpu/containers/uid-1_app", false},
      {"/tmp/vgpulock", "/tmp/vgpulock", false},
      {"/etc/ld.so.preload", "/usr/local/vgpu/ld.so.preload", true},
  };
  EXPECT_EQ(r.mounts, want_mounts);
}

TEST(BuildContainerResponse, OptionalEnvFollowSettings) {
  struct Case {
    double scaling;
    bool disable_core;
    std::optional<std::string> log;
    bool want_oversub, want_policy, want_log;
  };
  const std::vector<Case> cases = {
      {1.0, false, std::nullopt, false, false, false},
      {1.5, false, std::nullopt, true, false, false},
      {0.5, true, std::string("4"), false, true, true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    ResponseSettings s;
    s.hook_path = "/opt/hook";
    s.memory_scaling = cases[i].scaling;
    s.disable_core_limit = cases[i].disable_core;
    s.log_level = cases[i].log;
    auto got = BuildContainerResponse({{"GPU-a", 1, 1}}, "u", {"c", false, {}}, "id", s);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ContainerResponse& r = *got;
    EXPECT_EQ(r.envs.count("CUDA_OVERSUBSCRIBE"), cases[i].want_oversub ? 1u : 0u) << i;
    EXPECT_EQ(r.envs.count("GPU_CORE_UTILIZATION_POLICY"), cases[i].want_policy ? 1u : 0u) << i;
    EXPECT_EQ(r.envs.count("LIBCUDA_LOG_LEVEL"), cases[i].want_log ? 1u : 0u) << i;
    EXPECT_EQ(r.envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"], "/opt/hook/vgpu/id.cache") << i;
  }
}

TEST(BuildContainerResponse, DisableControlNeedsBothTenantAndAdmin) {
  const MountSpec preload{"/etc/ld.so.preload", "/usr/local/vgpu/ld.so.preload", true};
  struct Case {
    const char* env_value;  // nullptr = not set
    bool admin_allows;
    bool want_preload;
  };
  const std::vector<Case> cases = {
      {nullptr, false, true}, {nullptr, true, true}, {"true", false, true},
      {"true", true, false},  {"false", true, true}, {"TRUE", true, true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    ContainerView c{"c", false, {}};
    if (cases[i].env_value) c.env["CUDA_DISABLE_CONTROL"] = cases[i].env_value;
    ResponseSettings s;
    s.allow_disable_control = cases[i].admin_allows;
    auto r = BuildContainerResponse({{"GPU-a", 1, 1}}, "u", c, "id", s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(HasMount(*r, preload), cases[i].want_preload) << "case " << i;
  }
}

// MPS mode, one vGPU per container: the client's environment and mounts, table by cores and
// memory. HAMi's memory limit stays (libvgpu enforces it exactly); the SM limit stays for the
// monitor's display while MPS partitions the SMs by the thread percentage.
TEST(BuildContainerResponse, MpsClientTable) {
  struct Case {
    int64_t mem, cores;
    const char* want_threads;
    const char* want_pinned;
  };
  const Case cases[] = {
      {3000, 30, "30", "0=3000M"},
      {8192, 0, "100", "0=8192M"},  // no cores asked: no MPS cap
      {1, 1, "1", "0=1M"},
      {40000, 100, "100", "0=40000M"},
      {40000, 250, "100", "0=40000M"},  // core scaling > 1 can exceed 100: MPS caps at 100
  };
  for (const Case& c : cases) {
    ResponseSettings s;
    s.libvgpu_version = "0.1.0";
    s.operating_mode = "mps";
    s.mps_root = "/var/run/vgpu-mps/";
    auto got =
        BuildContainerResponse({{"GPU-a", c.mem, c.cores}}, "uid-1", {"app", false, {}}, "abc", s);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const std::map<std::string, std::string> want_env = {
        {"VGPU_SHARING_MODE", "mps"},
        {"NVIDIA_VISIBLE_DEVICES", "GPU-a"},
        {"CUDA_DEVICE_MEMORY_LIMIT_0", std::to_string(c.mem) + "m"},
        {"CUDA_DEVICE_SM_LIMIT", std::to_string(c.cores)},
        {"CUDA_DEVICE_SM_LIMIT_0", std::to_string(c.cores)},
        {"CUDA_DEVICE_MEMORY_SHARED_CACHE", "/usr/local/vgpu/abc.cache"},
        {"CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"},
        {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", c.want_threads},
        {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", c.want_pinned},
    };
    EXPECT_EQ(got->envs, want_env) << c.mem << "/" << c.cores;
    const std::vector<MountSpec> want_mounts = {
        {"/tmp/nvidia-mps", "/var/run/vgpu-mps/GPU-a/pipe", false},
        {"/dev/shm", "/var/run/vgpu-mps/shm", false},
        {"/usr/local/vgpu/libvgpu.so", "/usr/local/vgpu/libvgpu.so.0.1.0", true},
        {"/usr/local/vgpu", "/usr/local/vgpu/containers/uid-1_app", false},
        {"/tmp/vgpulock", "/tmp/vgpulock", false},
        {"/etc/ld.so.preload", "/usr/local/vgpu/ld.so.preload", true},
    };
    EXPECT_EQ(got->mounts, want_mounts);
  }
}

// Fail closed: MPS mode never answers a container with several GPUs or a GPU whose UUID could
// leave the MPS directory, and an unknown mode answers nothing.
TEST(BuildContainerResponse, MpsRefusals) {
  struct Case {
    const char* mode;
    std::vector<GrantedDevice> devices;
    const char* want;
  };
  const Case cases[] = {
      {"mps", {{"GPU-a", 1000, 10}, {"GPU-b", 1000, 10}}, "has 2 GPUs; in MPS mode"},
      {"mps", {}, "has 0 GPUs"},
      {"mps", {{"../etc", 1000, 10}}, "cannot name an MPS directory"},
      {"time-slice", {{"GPU-a", 1000, 10}}, "operating mode \"time-slice\" is not one of"},
  };
  for (const Case& c : cases) {
    ResponseSettings s;
    s.operating_mode = c.mode;
    auto got = BuildContainerResponse(c.devices, "u", {"c", false, {}}, "id", s);
    ASSERT_FALSE(got.ok()) << c.want;
    EXPECT_NE(got.status().message().find(c.want), std::string::npos) << got.status().message();
  }
}

}  // namespace
}  // namespace vgpu::allocate
