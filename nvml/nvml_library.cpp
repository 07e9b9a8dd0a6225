#include "nvml/nvml_library.h"

#include <dlfcn.h>

namespace vgpu::nvml {
namespace {

template <typename Fn>
bool Bind(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  return fn != nullptr;
}

}  // namespace

Result<std::unique_ptr<Library>> Library::Open(const std::string& path, const std::string& hint) {
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = ::dlerror();
    return Unavailable("cannot load " + path + " (" + (err != nullptr ? err : "unknown error") +
                       ")" + (hint.empty() ? "" : "; " + hint));
  }
  Api api{};
  const bool ok = (Bind(lib, "nvmlInit_v2", api.init) || Bind(lib, "nvmlInit", api.init)) &&
                  Bind(lib, "nvmlShutdown", api.shutdown) &&
                  (Bind(lib, "nvmlDeviceGetCount_v2", api.get_count) ||
                   Bind(lib, "nvmlDeviceGetCount", api.get_count)) &&
                  (Bind(lib, "nvmlDeviceGetHandleByIndex_v2", api.handle_by_index) ||
                   Bind(lib, "nvmlDeviceGetHandleByIndex", api.handle_by_index)) &&
                  Bind(lib, "nvmlDeviceGetUUID", api.get_uuid) &&
                  Bind(lib, "nvmlDeviceGetName", api.get_name) &&
                  Bind(lib, "nvmlDeviceGetMemoryInfo", api.get_memory);
  if (!ok) {
    (void)::dlclose(lib);
    return Unavailable(path + " lacks a required NVML function; the driver is too old");
  }
  Bind(lib, "nvmlErrorString", api.error_string);
  Bind(lib, "nvmlDeviceGetHandleByUUID", api.handle_by_uuid);
  if (!Bind(lib, "nvmlDeviceGetPciInfo_v3", api.get_pci)) {
    Bind(lib, "nvmlDeviceGetPciInfo", api.get_pci);
  }
  Bind(lib, "nvmlDeviceGetUtilizationRates", api.get_utilization);
  Bind(lib, "nvmlDeviceGetProcessUtilization", api.get_process_utilization);
  if (!Bind(lib, "nvmlDeviceGetComputeRunningProcesses_v3", api.get_processes) &&
      !Bind(lib, "nvmlDeviceGetComputeRunningProcesses_v2", api.get_processes)) {
    Bind(lib, "nvmlDeviceGetComputeRunningProcesses", api.get_processes_v1);
  }
  Bind(lib, "nvmlEventSetCreate", api.event_set_create);
  Bind(lib, "nvmlDeviceRegisterEvents", api.register_events);
  if (!Bind(lib, "nvmlEventSetWait_v2", api.event_set_wait)) {
    Bind(lib, "nvmlEventSetWait", api.event_set_wait);
  }
  Bind(lib, "nvmlEventSetFree", api.event_set_free);
  Bind(lib, "nvmlDeviceGetTopologyCommonAncestor", api.get_topology_common_ancestor);
  Bind(lib, "nvmlDeviceGetNvLinkState", api.get_nvlink_state);
  if (!Bind(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", api.get_nvlink_remote_pci)) {
    Bind(lib, "nvmlDeviceGetNvLinkRemotePciInfo", api.get_nvlink_remote_pci);
  }
  Bind(lib, "nvmlDeviceGetNvLinkRemoteDeviceType", api.get_nvlink_remote_device_type);
  if (const Return rc = api.init(); rc != kSuccess) {
    const char* text = api.error_string != nullptr ? api.error_string(rc) : nullptr;
    (void)::dlclose(lib);
    return Unavailable("nvmlInit failed: " +
                       (text != nullptr ? std::string(text) : "error " + std::to_string(rc)));
  }
  return std::make_unique<Library>(api);
}

Library::~Library() {
  api_.shutdown();
}

std::string Library::Error(const char* call, Return rc) const {
  const char* text = api_.error_string != nullptr ? api_.error_string(rc) : nullptr;
  return std::string("NVML ") + call +
         " failed: " + (text != nullptr ? text : "error " + std::to_string(rc));
}

Result<std::vector<GpuId>> ListGpus(const Library& nvml) {
  const Api& api = nvml.api();
  unsigned int count = 0;
  if (const Return rc = api.get_count(&count); rc != kSuccess) {
    return Unavailable(nvml.Error("nvmlDeviceGetCount", rc));
  }
  std::vector<GpuId> gpus;
  for (unsigned int i = 0; i < count; ++i) {
    Device dev = nullptr;
    if (const Return rc = api.handle_by_index(i, &dev); rc != kSuccess) {
      return Unavailable(nvml.Error("nvmlDeviceGetHandleByIndex", rc) + " for GPU " +
                         std::to_string(i));
    }
    char uuid[96] = {};
    if (const Return rc = api.get_uuid(dev, uuid, sizeof uuid); rc != kSuccess) {
      return Unavailable(nvml.Error("nvmlDeviceGetUUID", rc) + " for GPU " + std::to_string(i));
    }
    gpus.push_back({static_cast<int>(i), uuid});
  }
  return gpus;
}

}  // namespace vgpu::nvml
