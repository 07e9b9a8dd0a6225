#include "deviceplugin/nvml_backend.h"

#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>

#include "core/base/strings.h"
#include "nvml/nvml_library.h"

namespace vgpu::deviceplugin {
namespace {

using nvml::Device;
using nvml::kSuccess;
using nvml::Return;

class NvmlBackend : public GpuBackend {
 public:
  NvmlBackend(std::unique_ptr<nvml::Library> nvml, std::string sysfs_root)
      : nvml_(std::move(nvml)), api_(nvml_->api()), sysfs_root_(std::move(sysfs_root)) {}
  ~NvmlBackend() override {
    if (events_ != nullptr && api_.event_set_free != nullptr) {
      api_.event_set_free(events_);
    }
    // nvml_'s destruction shuts NVML down.
  }
  NvmlBackend(const NvmlBackend&) = delete;
  NvmlBackend& operator=(const NvmlBackend&) = delete;

  std::string Error(const char* call, Return rc) const { return nvml_->Error(call, rc); }

  Result<std::vector<GpuDevice>> Discover() override {
    std::lock_guard lock(mu_);
    unsigned int count = 0;
    if (auto rc = api_.get_count(&count); rc != kSuccess) {
      return Unavailable(Error("nvmlDeviceGetCount", rc));
    }
    std::vector<GpuDevice> gpus;
    for (unsigned int i = 0; i < count; ++i) {
      Device dev = nullptr;
      if (auto rc = api_.handle_by_index(i, &dev); rc != kSuccess) {
        return Unavailable(Error("nvmlDeviceGetHandleByIndex", rc) + " for GPU " +
                           std::to_string(i));
      }
      char uuid[96] = {};
      char name[96] = {};
      nvml::Memory mem{};
      if (auto rc = api_.get_uuid(dev, uuid, sizeof uuid); rc != kSuccess) {
        return Unavailable(Error("nvmlDeviceGetUUID", rc));
      }
      if (auto rc = api_.get_name(dev, name, sizeof name); rc != kSuccess) {
        return Unavailable(Error("nvmlDeviceGetName", rc));
      }
      if (auto rc = api_.get_memory(dev, &mem); rc != kSuccess) {
        return Unavailable(Error("nvmlDeviceGetMemoryInfo", rc));
      }
      GpuDevice g;
      g.uuid = uuid;
      g.index = static_cast<int>(i);
      g.model = name;
      g.memory_mib = static_cast<int64_t>(mem.total / (1024ULL * 1024ULL));
      nvml::PciInfo pci{};
      if (api_.get_pci != nullptr && api_.get_pci(dev, &pci) == kSuccess) {
        g.numa = ReadNumaNode(sysfs_root_, pci.bus_id);
      }
      if (api_.register_events != nullptr && events_ != nullptr) {
        api_.register_events(dev, nvml::kEventXidCritical, events_);  // best effort, per device
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
    nvml::EventData data{};
    auto rc = api_.event_set_wait(events_, &data, static_cast<unsigned int>(timeout.count()));
    if (rc == nvml::kErrorTimeout) {
      return std::optional<XidEvent>();
    }
    if (rc != kSuccess) {
      return Unavailable(Error("nvmlEventSetWait", rc));
    }
    if ((data.event_type & nvml::kEventXidCritical) == 0) {
      return std::optional<XidEvent>();
    }
    char uuid[96] = {};
    std::lock_guard lock(mu_);
    if (api_.get_uuid(data.device, uuid, sizeof uuid) != kSuccess) {
      return std::optional<XidEvent>();
    }
    return std::optional<XidEvent>(XidEvent{uuid, data.event_data});
  }

  bool Responds(const std::string& uuid) override {
    std::lock_guard lock(mu_);
    Device dev = nullptr;
    if (api_.handle_by_uuid == nullptr) {
      return true;
    }
    if (api_.handle_by_uuid(uuid.c_str(), &dev) != kSuccess) {
      return false;
    }
    nvml::Memory mem{};
    return api_.get_memory(dev, &mem) == kSuccess;
  }

  // As HAMi's device plugin reads it (pkg/device/nvidia/links.go): the common ancestor of every
  // pair, and each GPU's enabled NVLinks with their remote PCI bus id and device type. Links that
  // answer NOT_SUPPORTED or INVALID_ARGUMENT are skipped; any other NVML error fails the whole
  // topology (no scores are published), as in HAMi.
  Result<std::optional<codec::GpuTopology>> Topology() override {
    if (api_.get_topology_common_ancestor == nullptr) {
      return std::optional<codec::GpuTopology>();  // too old a driver: no scores
    }
    std::lock_guard lock(mu_);
    unsigned int count = 0;
    if (auto rc = api_.get_count(&count); rc != kSuccess) {
      return Unavailable(Error("nvmlDeviceGetCount", rc));
    }
    std::vector<Device> devs(count, nullptr);
    codec::GpuTopology t;
    for (unsigned int i = 0; i < count; ++i) {
      if (auto rc = api_.handle_by_index(i, &devs[i]); rc != kSuccess) {
        return Unavailable(Error("nvmlDeviceGetHandleByIndex", rc));
      }
      codec::TopologyGpu g;
      char uuid[96] = {};
      if (auto rc = api_.get_uuid(devs[i], uuid, sizeof uuid); rc != kSuccess) {
        return Unavailable(Error("nvmlDeviceGetUUID", rc));
      }
      g.uuid = uuid;
      nvml::PciInfo pci{};
      if (api_.get_pci == nullptr) return std::optional<codec::GpuTopology>();
      if (auto rc = api_.get_pci(devs[i], &pci); rc != kSuccess) {
        return Unavailable(Error("nvmlDeviceGetPciInfo", rc));
      }
      g.bus_id = std::string(pci.bus_id, strnlen(pci.bus_id, sizeof pci.bus_id));
      auto links = NvLinks(devs[i], &g);
      if (!links.ok()) return links;
      t.gpus.push_back(std::move(g));
    }
    t.pcie_level.assign(count, std::vector<int>(count, codec::kTopologyUnknown));
    for (unsigned int i = 0; i < count; ++i) {
      for (unsigned int j = 0; j < count; ++j) {
        if (i == j) continue;
        int level = 0;
        if (auto rc = api_.get_topology_common_ancestor(devs[i], devs[j], &level); rc != kSuccess) {
          return Unavailable(Error("nvmlDeviceGetTopologyCommonAncestor", rc));
        }
        t.pcie_level[i][j] = level;
      }
    }
    return std::optional<codec::GpuTopology>(std::move(t));
  }

  void CreateEventSet() {
    if (api_.event_set_create == nullptr || api_.event_set_wait == nullptr) {
      return;
    }
    if (api_.event_set_create(&events_) != kSuccess) {
      events_ = nullptr;
    }
  }

 private:
  // Fills the enabled NVLinks of `dev` into `g`; ok(nullopt) on success.
  Result<std::optional<codec::GpuTopology>> NvLinks(Device dev, codec::TopologyGpu* g) {
    if (api_.get_nvlink_state == nullptr || api_.get_nvlink_remote_pci == nullptr) {
      return std::optional<codec::GpuTopology>();
    }
    auto skip = [](Return rc) {
      return rc == nvml::kErrorNotSupported || rc == nvml::kErrorInvalidArgument;
    };
    for (unsigned int link = 0; link < nvml::kNvLinkMaxLinks; ++link) {
      int state = 0;
      Return rc = api_.get_nvlink_state(dev, link, &state);
      if (skip(rc)) continue;
      if (rc != kSuccess) return Unavailable(Error("nvmlDeviceGetNvLinkState", rc));
      if (state != nvml::kFeatureEnabled) continue;
      nvml::PciInfo remote{};
      rc = api_.get_nvlink_remote_pci(dev, link, &remote);
      if (skip(rc)) continue;
      if (rc != kSuccess) return Unavailable(Error("nvmlDeviceGetNvLinkRemotePciInfo", rc));
      g->nvlink_remote_bus_ids.emplace_back(remote.bus_id,
                                            strnlen(remote.bus_id, sizeof remote.bus_id));
      if (api_.get_nvlink_remote_device_type == nullptr) continue;
      int type = 0;
      rc = api_.get_nvlink_remote_device_type(dev, link, &type);
      if (skip(rc)) continue;
      if (rc != kSuccess) return Unavailable(Error("nvmlDeviceGetNvLinkRemoteDeviceType", rc));
      if (type == nvml::kNvLinkDeviceTypeSwitch) ++g->nvswitch_links;
    }
    return std::optional<codec::GpuTopology>();
  }

  std::unique_ptr<nvml::Library> nvml_;
  const nvml::Api& api_;
  std::string sysfs_root_;
  std::mutex mu_;
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  nvml::EventSet events_ = nullptr;
};

}  // namespace

int ReadNumaNode(const std::string& sysfs_root, const std::string& pci_bus_id) {
  // NVML writes "00000000:3B:00.0"; sysfs names devices "0000:3b:00.0" (4-digit domain, lower
  // case).
  std::string id = Lower(pci_bus_id);
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
  auto nvml = nvml::Library::Open(library,
                                  "is the NVIDIA driver installed and visible to the plugin? Use "
                                  "--fake-gpus on machines without GPUs");
  if (!nvml.ok()) return nvml.status();
  auto backend = std::make_unique<NvmlBackend>(std::move(*nvml), sysfs_root);
  backend->CreateEventSet();
  return std::unique_ptr<GpuBackend>(std::move(backend));
}

}  // namespace vgpu::deviceplugin
