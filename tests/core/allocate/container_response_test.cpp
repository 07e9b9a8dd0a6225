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
  auto r = BuildContainerResponse({{"GPU-a", 3000, 30}, {"GPU-b", 5000, 0}}, "uid-1", c, "abc", s);
  const std::map<std::string, std::string> want_env = {
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
    auto r = BuildContainerResponse({{"GPU-a", 1, 1}}, "u", {"c", false, {}}, "id", s);
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
    EXPECT_EQ(HasMount(r, preload), cases[i].want_preload) << "case " << i;
  }
}

}  // namespace
}  // namespace vgpu::allocate
