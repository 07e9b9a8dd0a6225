#include "core/allocate/container_response.h"

#include "core/codec/container_dir.h"
#include "vgpu/env_contract.h"

namespace vgpu::allocate {

ContainerResponse BuildContainerResponse(const std::vector<GrantedDevice>& devices,
                                         const std::string& pod_uid, const ContainerView& container,
                                         const std::string& cache_id,
                                         const ResponseSettings& settings) {
  ContainerResponse r;
  const std::string vgpu_dir = settings.hook_path + "/vgpu";
  std::string visible;
  for (size_t i = 0; i < devices.size(); ++i) {
    const GrantedDevice& d = devices[i];
    if (i > 0) {
      visible += ",";
    }
    visible += d.uuid;
    const std::string idx = std::to_string(i);
    r.envs[std::string(VGPU_ENV_MEMORY_LIMIT) + "_" + idx] = std::to_string(d.mem_mib) + "m";
    r.envs[std::string(VGPU_ENV_SM_LIMIT) + "_" + idx] = std::to_string(d.cores);
  }
  r.envs[VGPU_ENV_NVIDIA_VISIBLE_DEVICES] = visible;
  if (!devices.empty()) {
    r.envs[VGPU_ENV_SM_LIMIT] = std::to_string(devices.front().cores);
  }
  r.envs[VGPU_ENV_SHARED_CACHE] = vgpu_dir + "/" + cache_id + ".cache";
  if (settings.memory_scaling > 1.0) {
    r.envs[VGPU_ENV_OVERSUBSCRIBE] = "true";
  }
  if (settings.disable_core_limit) {
    r.envs[VGPU_ENV_CORE_POLICY] = VGPU_CORE_POLICY_DISABLE;
  }
  if (settings.log_level) {
    r.envs[VGPU_ENV_LOG_LEVEL] = *settings.log_level;
  }

  r.mounts.push_back(
      {vgpu_dir + "/libvgpu.so", vgpu_dir + "/libvgpu.so." + settings.libvgpu_version, true});
  r.mounts.push_back(
      {vgpu_dir, codec::ContainerDirPath(vgpu_dir, {pod_uid, container.name}), false});
  r.mounts.push_back({VGPU_DEFAULT_LOCK_DIR, VGPU_DEFAULT_LOCK_DIR, false});

  auto opt_out = container.env.find(VGPU_ENV_DISABLE_CONTROL);
  const bool wants_out = opt_out != container.env.end() && opt_out->second == "true";
  if (!(wants_out && settings.allow_disable_control)) {
    r.mounts.push_back({VGPU_PRELOAD_FILE, vgpu_dir + "/ld.so.preload", true});
  }
  return r;
}

}  // namespace vgpu::allocate
