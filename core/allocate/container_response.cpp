#include "core/allocate/container_response.h"

#include "core/codec/container_dir.h"
#include "vgpu/env_contract.h"

namespace vgpu::allocate {

Result<ContainerResponse> BuildContainerResponse(const std::vector<GrantedDevice>& devices,
                                                 const std::string& pod_uid,
                                                 const ContainerView& container,
                                                 const std::string& cache_id,
                                                 const ResponseSettings& settings) {
  const bool mps = settings.operating_mode == annotations::kModeMps;
  if (!mps && settings.operating_mode != annotations::kModeHamiCore) {
    return InvalidArgument("operating mode \"" + settings.operating_mode +
                           "\" is not one of hami-core, mps");
  }
  if (mps && devices.size() != 1) {
    return FailedPrecondition("container " + container.name + " has " +
                              std::to_string(devices.size()) +
                              " GPUs; in MPS mode a container takes exactly one (docs/mps.md)");
  }
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
  // Said on time-sliced nodes too: a library that reads the mode never has to guess it.
  r.envs[VGPU_ENV_SHARING_MODE] = mps ? VGPU_SHARING_MPS : VGPU_SHARING_TIME_SLICE;
  if (mps) {
    Result<MpsDirs> dirs = MpsDirsFor(settings.mps_root, devices.front().uuid);
    if (!dirs.ok()) return dirs.status().WithContext("container " + container.name);
    // CUDA_DEVICE_SM_LIMIT_<i> stays for the monitor's display; libvgpu reads the mode and leaves
    // the SMs to MPS. The log directory is the daemon's alone: clients never read it, and it
    // names the other tenants' processes.
    r.envs[VGPU_ENV_MPS_PIPE_DIRECTORY] = std::string(kClientPipeDir);
    r.envs[VGPU_ENV_MPS_ACTIVE_THREAD_PERCENTAGE] =
        std::to_string(ActiveThreadPercentage(devices.front().cores));
    r.envs[VGPU_ENV_MPS_PINNED_DEVICE_MEM_LIMIT] = PinnedDeviceMemLimit(devices);
    r.mounts.push_back({std::string(kClientPipeDir), dirs->pipe, false});
    r.mounts.push_back({std::string(kClientShmDir), dirs->shm, false});
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
