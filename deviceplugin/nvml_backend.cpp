#include "deviceplugin/nvml_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <fstream>
#include <mutex>

namespace vgpu::deviceplugin {
namespace {

// Minimal NVML declarations (no nvml.h ships with the toolkit headers we build against).
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorTimeout = 10;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;
constexpr unsigned long long kEventXidCritical = 0x8ULL;  // nvmlEventTypeXidCriticalError

struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlPciInfo {  // nvmlPciInfo_t (v3 layout)
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct NvmlEventData {  // nvmlEventData_t
  nvmlDevice_t device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

struct NvmlApi {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*get_count)(unsigned int*);
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*handle_by_uuid)(const char*, nvmlDevice_t*);
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*get_memory)(nvmlDevice_t, NvmlMemory*);
  nvmlReturn_t (*get_pci)(nvmlDevice_t, NvmlPciInfo*);
  // Optional: events (absent from some drivers' stubs and from the fake driver).
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*);
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, NvmlEventData*, unsigned int);
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t);
};

template <typename Fn>
bool Bind(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  return fn != nullptr;
}

class NvmlBackend : public GpuBackend {
 public:
  NvmlBackend(NvmlApi api, std::string sysfs_root)
      : api_(api), sysfs_root_(std::move(sysfs_root)) {}
  ~NvmlBackend() override {
    if (events_ != nullptr && api_.event_set_free != nullptr) {
      api_.event_set_free(events_);
    }
    api_.shutdown();
    // The library stays loaded: driver libraries keep process-wide state that is not safe to
    // unmap (and a leak checker would report that state as lost once unmapped).
  }

  std::string Error(const char* call, nvmlReturn_t rc) {
    const char* text = api_.error_string != nullptr ? api_.error_string(rc) : nullptr;
    return std::string("NVML ") + call +
           " failed: " + (text ? text : "error " + std::to_string(rc));
  }

  Result<std::vector<GpuDevice>> Discover() override {
    std::lock_guard lock(mu_);
    unsigned int count = 0;
    if (auto rc = api_.get_count(&count); rc != kNvmlSuccess) {
      return Unavailable(Error("nvmlDeviceGetCount", rc));
    }
    std::vector<GpuDevice> gpus;
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      if (auto rc = api_.handle_by_index(i, &dev); rc != kNvmlSuccess) {
        return Unavailable(Error("nvmlDeviceGetHandleByIndex", rc) + " for GPU " +
                           std::to_string(i));
      }
      char uuid[96] = {};
      char name[96] = {};
      NvmlMemory mem{};
      if (auto rc = api_.get_uuid(dev, uuid, sizeof uuid); rc != kNvmlSuccess) {
        return Unavailable(Error("nvmlDeviceGetUUID", rc));
      }
      if (auto rc = api_.get_name(dev, name, sizeof name); rc != kNvmlSuccess) {
        return Unavailable(Error("nvmlDeviceGetName", rc));
      }
      if (auto rc = api_.get_memory(dev, &mem); rc != kNvmlSuccess) {
        return Unavailable(Error("nvmlDeviceGetMemoryInfo", rc));
      }
      GpuDevice g;
      g.uuid = uuid;
      g.index = static_cast<int>(i);
      g.model = name;
      g.memory_mib = static_cast<int64_t>(mem.total / (1024ULL * 1024ULL));
      NvmlPciInfo pci{};
      if (api_.get_pci != nullptr && api_.get_pci(dev, &pci) == kNvmlSuccess) {
        g.numa = ReadNumaNode(sysfs_root_, pci.bus_id);
      }
      if (api_.register_events != nullptr && events_ != nullptr) {
        api_.register_events(dev, kEventXidCritical, events_);  // best effort, per device
      }
      gpus.push_back(std::move(g));
    }
    return gpus;
  }

  Result<std::optional<XidEvent>> WaitXid(std::chrono::milliseconds timeout) override {
    if (events_ == nullptr || api_.event_set_wait == nullptr) {
      std::unique_lock lock(wait_mu_);
      wait_cv_.wait_for(lock, timeout);
      return std::optional<XidEvent>();
    }
    NvmlEventData data{};
    auto rc = api_.event_set_wait(events_, &data, static_cast<unsigned int>(timeout.count()));
    if (rc == kNvmlErrorTimeout) {
      return std::optional<XidEvent>();
    }
    if (rc != kNvmlSuccess) {
      return Unavailable(Error("nvmlEventSetWait", rc));
    }
    if ((data.event_type & kEventXidCritical) == 0) {
      return std::optional<XidEvent>();
    }
    char uuid[96] = {};
    std::lock_guard lock(mu_);
    if (api_.get_uuid(data.device, uuid, sizeof uuid) != kNvmlSuccess) {
      return std::optional<XidEvent>();
    }
    return std::optional<XidEvent>(XidEvent{uuid, data.event_data});
  }

  bool Responds(const std::string& uuid) override {
    std::lock_guard lock(mu_);
    nvmlDevice_t dev = nullptr;
    if (api_.handle_by_uuid == nullptr) {
      return true;
    }
    if (api_.handle_by_uuid(uuid.c_str(), &dev) != kNvmlSuccess) {
      return false;
    }
    NvmlMemory mem{};
    return api_.get_memory(dev, &mem) == kNvmlSuccess;
  }

  void CreateEventSet() {
    if (api_.event_set_create == nullptr || api_.event_set_wait == nullptr) {
      return;
    }
    if (api_.event_set_create(&events_) != kNvmlSuccess) {
      events_ = nullptr;
    }
  }

 private:
  NvmlApi api_;
  std::string sysfs_root_;
  std::mutex mu_;
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  nvmlEventSet_t events_ = nullptr;
};

}  // namespace

int ReadNumaNode(const std::string& sysfs_root, const std::string& pci_bus_id) {
  // NVML writes "00000000:3B:00.0"; sysfs names devices "0000:3b:00.0" (4-digit domain, lower
  // case).
  std::string id = pci_bus_id;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  if (id.size() > 12 && id.find(':') == 8) {
    id = id.substr(4);
  }
  std::ifstream in(sysfs_root + "/bus/pci/devices/" + id + "/numa_node");
  int node = -1;
  if (!(in >> node) || node < 0) {
    return 0;
  }
  return node;
}

Result<std::unique_ptr<GpuBackend>> OpenNvmlBackend(const std::string& library,
                                                    const std::string& sysfs_root) {
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = ::dlerror();
    return Unavailable("cannot load " + library + " (" + (err ? err : "unknown error") +
                       "); is the NVIDIA driver installed and visible to the plugin? Use "
                       "--fake-gpus on machines without GPUs");
  }
  NvmlApi api{};
  bool ok = (Bind(lib, "nvmlInit_v2", api.init) || Bind(lib, "nvmlInit", api.init)) &&
            Bind(lib, "nvmlShutdown", api.shutdown) &&
            (Bind(lib, "nvmlDeviceGetCount_v2", api.get_count) ||
             Bind(lib, "nvmlDeviceGetCount", api.get_count)) &&
            (Bind(lib, "nvmlDeviceGetHandleByIndex_v2", api.handle_by_index) ||
             Bind(lib, "nvmlDeviceGetHandleByIndex", api.handle_by_index)) &&
            Bind(lib, "nvmlDeviceGetUUID", api.get_uuid) &&
            Bind(lib, "nvmlDeviceGetName", api.get_name) &&
            Bind(lib, "nvmlDeviceGetMemoryInfo", api.get_memory);
  if (!ok) {
    ::dlclose(lib);
    return Unavailable(library + " lacks a required NVML function; the driver is too old");
  }
  Bind(lib, "nvmlErrorString", api.error_string);
  Bind(lib, "nvmlDeviceGetHandleByUUID", api.handle_by_uuid);
  if (!Bind(lib, "nvmlDeviceGetPciInfo_v3", api.get_pci)) {
    Bind(lib, "nvmlDeviceGetPciInfo", api.get_pci);
  }
  Bind(lib, "nvmlEventSetCreate", api.event_set_create);
  Bind(lib, "nvmlDeviceRegisterEvents", api.register_events);
  if (!Bind(lib, "nvmlEventSetWait_v2", api.event_set_wait)) {
    Bind(lib, "nvmlEventSetWait", api.event_set_wait);
  }
  Bind(lib, "nvmlEventSetFree", api.event_set_free);
  if (auto rc = api.init(); rc != kNvmlSuccess) {
    std::string text = api.error_string ? api.error_string(rc) : std::to_string(rc);
    ::dlclose(lib);
    return Unavailable("nvmlInit failed: " + text);
  }
  auto backend = std::make_unique<NvmlBackend>(api, sysfs_root);
  backend->CreateEventSet();
  return std::unique_ptr<GpuBackend>(std::move(backend));
}

}  // namespace vgpu::deviceplugin
