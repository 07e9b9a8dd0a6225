#include "core/allocate/container_response.h"

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
    r.envs["CUDA_DEVICE_MEMORY_LIMIT_" + idx] = std::to_string(d.mem_mib) + "m";
    r.envs["CUDA_DEVICE_SM_LIMIT_" + idx] = std::to_string(d.cores);
  }
  r.envs["NVIDIA_VISIBLE_DEVICES"] = visible;
  if (!devices.empty()) {
    r.envs["CUDA_DEVICE_SM_LIMIT"] = std::to_string(devices.front().cores);
  }
  r.envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = vgpu_dir + "/" + cache_id + ".cache";
  if (settings.memory_scaling > 1.0) {
    r.envs["CUDA_OVERSUBSCRIBE"] = "true";
  }
  if (settings.disable_core_limit) {
    r.envs["GPU_CORE_UTILIZATION_POLICY"] = "disable";
  }
  if (settings.log_level) {
    r.envs["LIBCUDA_LOG_LEVEL"] = *settings.log_level;
  }

  r.mounts.push_back(
      {vgpu_dir + "/libvgpu.so", vgpu_dir + "/libvgpu.so." + settings.libvgpu_version, true});
  r.mounts.push_back({vgpu_dir, vgpu_dir + "/containers/" + pod_uid + "_" + container.name, false});
  r.mounts.push_back({"/tmp/vgpulock", "/tmp/vgpulock", false});

  auto opt_out = container.env.find("CUDA_DISABLE_CONTROL");
  const bool wants_out = opt_out != container.env.end() && opt_out->second == "true";
  if (!(wants_out && settings.allow_disable_control)) {
    r.mounts.push_back({"/etc/ld.so.preload", vgpu_dir + "/ld.so.preload", true});
  }
  return r;
}

}  // namespace vgpu::allocate
