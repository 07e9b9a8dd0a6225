// Fake libnvidia-ml.so.1: NVML over the simulated GPUs. Memory and process usage come from the
// cross-process state the fake libcuda maintains; NVML ignores CUDA_VISIBLE_DEVICES, like the
// real one.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fake_config.h"
#include "fake_topology.h"
#include "nvml_api.h"
#include "shared_state.h"
#include "sim_clock.h"

struct nvmlDevice_st {
  int index;
};

// An event set: per registered device, the event types wanted and the last event seen.
struct nvmlEventSet_st {
  struct Registration {
    int index;
    unsigned long long mask;
    uint64_t seen;
  };
  std::vector<Registration> registrations;
};

namespace vgpu::fake {
namespace {

struct NvmlState {
  std::mutex mu;
  int init_count = 0;
  FakeConfig config;
  SharedState* shared = nullptr;
  nvmlDevice_st devices[kMaxDevices]{};
  std::map<nvmlEventSet_st*, std::unique_ptr<nvmlEventSet_st>> event_sets;
};

constexpr unsigned long long kSupportedEvents = nvmlEventTypeXidCriticalError;

// Takes the next wanted event of `set` if one is pending.
bool TakeEvent(NvmlState& s, nvmlEventSet_st* set, nvmlEventData_t* data) {
  for (auto& reg : set->registrations) {
    DeviceEvent ev{};
    while (s.shared->NextEvent(reg.index, reg.seen, &ev)) {
      reg.seen = ev.seq;
      if ((ev.type & reg.mask) == 0) continue;
      *data = nvmlEventData_t{};
      data->device = &s.devices[reg.index];
      data->eventType = ev.type;
      data->eventData = ev.data;
      data->gpuInstanceId = 0xFFFFFFFFU;
      data->computeInstanceId = 0xFFFFFFFFU;
      return true;
    }
  }
  return false;
}

NvmlState& State() {
  static NvmlState s;
  return s;
}

// Devices are valid only between init and shutdown; a GPU marked lost answers nothing.
nvmlReturn_t CheckDevice(nvmlDevice_t device, NvmlState** out) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || device < s.devices ||
      device >= s.devices + static_cast<int>(s.config.gpus.size())) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  if (s.shared->IsLost(device->index)) return NVML_ERROR_GPU_IS_LOST;
  *out = &s;
  return NVML_SUCCESS;
}

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned int length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < value.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value.c_str(), value.size() + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t Init() {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) {
    std::string error;
    auto cfg = LoadConfig(ProcessEnv, &error);
    if (!cfg) {
      (void)std::fprintf(stderr, "fake libnvidia-ml: %s\n", error.c_str());
      return NVML_ERROR_UNKNOWN;
    }
    SharedState* shared = SharedState::Open(cfg->state_dir, *cfg, &error);
    if (shared == nullptr) {
      (void)std::fprintf(stderr, "fake libnvidia-ml: %s\n", error.c_str());
      return NVML_ERROR_UNKNOWN;
    }
    s.config = std::move(*cfg);
    s.shared = shared;
    for (int i = 0; i < kMaxDevices; ++i) s.devices[i].index = i;
  }
  ++s.init_count;
  return NVML_SUCCESS;
}

void FillPci(int index, nvmlPciInfo_t* pci) {
  *pci = nvmlPciInfo_t{};
  const std::string legacy = PciBusId(index, false);
  const std::string full = PciBusId(index, true);
  (void)std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", legacy.c_str());
  (void)std::snprintf(pci->busId, sizeof pci->busId, "%s", full.c_str());
  pci->domain = 0;
  pci->bus = PciBus(index);
  pci->device = 0;
  pci->pciDeviceId = kPciDeviceId;
  pci->pciSubSystemId = 0x16c110de;
}

// The GPU at the far end of NVLink `link` of GPU `index`: links are numbered from 0 in the order
// of the peers' indices (4 links to GPU 1 = links 0-3). -1 when the link is not connected.
int NvLinkPeer(const FakeConfig& config, int index, unsigned int link) {
  unsigned int next = 0;
  for (int peer = 0; peer < static_cast<int>(config.gpus.size()); ++peer) {
    if (peer == index) continue;
    next += static_cast<unsigned int>(config.links[index][peer].nvlinks);
    if (link < next) return peer;
  }
  return -1;
}

bool HasNvLinks(const FakeConfig& config, int index) {
  return NvLinkPeer(config, index, 0) >= 0;
}

// Checks a link query: NVML_ERROR_INVALID_ARGUMENT beyond NVML_NVLINK_MAX_LINKS,
// NVML_ERROR_NOT_SUPPORTED on a GPU without NVLink (a PCIe card).
nvmlReturn_t CheckLink(nvmlDevice_t device, unsigned int link, NvmlState** out) {
  if (auto rc = CheckDevice(device, out); rc != NVML_SUCCESS) return rc;
  if (link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (!HasNvLinks((*out)->config, device->index)) return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

template <typename Info>
nvmlReturn_t RunningProcesses(nvmlDevice_t device, unsigned int* count, Info* infos, bool ids) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto procs = s->shared->Processes(device->index);
  const auto n = static_cast<unsigned int>(procs.size());
  if (*count < n || (infos == nullptr && n > 0)) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *count = n;
  for (unsigned int i = 0; i < n; ++i) {
    std::memset(&infos[i], 0, sizeof(Info));
    infos[i].pid = static_cast<unsigned int>(procs[i].pid + s->config.host_pid_offset);
    infos[i].usedGpuMemory = procs[i].used_bytes;
    if constexpr (requires { infos[i].gpuInstanceId; }) {
      if (ids) {
        infos[i].gpuInstanceId = 0xFFFFFFFFU;  // no MIG
        infos[i].computeInstanceId = 0xFFFFFFFFU;
      }
    }
  }
  return NVML_SUCCESS;
}

}  // namespace
}  // namespace vgpu::fake

using namespace vgpu::fake;

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  return Init();
}
nvmlReturn_t nvmlInit(void) {
  return Init();
}
nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) {
  return Init();
}

nvmlReturn_t nvmlShutdown(void) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --s.init_count;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument version mismatch";
    case NVML_ERROR_NOT_READY:
      return "Not ready";
    default:
      return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (State().init_count == 0) return NVML_ERROR_UNINITIALIZED;
  return CopyString(kNvidiaDriverVersion, version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* v) {
  if (v == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *v = kCudaDriverVersion;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) {
  return nvmlSystemGetCudaDriverVersion(v);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = static_cast<unsigned int>(s.config.gpus.size());
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return nvmlDeviceGetCount_v2(count);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= s.config.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &s.devices[index];
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < s.config.gpus.size(); ++i) {
    if (s.config.gpus[i].uuid == uuid) {
      *device = &s.devices[i];
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<unsigned int>(device->index);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return nvmlDeviceGetIndex(device, minor);
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (node == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *node = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  return CopyString(s->config.name, name, length);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  return CopyString(s->config.gpus[device->index].uuid, uuid, length);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const uint64_t total = s->config.gpus[device->index].memory_bytes;
  const uint64_t used = std::min(total, s->shared->DeviceUsed(device->index));
  memory->total = total;
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const uint64_t total = s->config.gpus[device->index].memory_bytes;
  const uint64_t used = std::min(total, s->shared->DeviceUsed(device->index));
  memory->total = total;
  memory->reserved = 0;
  memory->used = used;
  memory->free = total - used;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                  nvmlProcessInfo_v1_t* infos) {
  return RunningProcesses(device, infoCount, infos, false);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_v2_t* infos) {
  return RunningProcesses(device, infoCount, infos, true);
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, infoCount, infos, true);
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  // Timestamps are CPU wall-clock microseconds, as in the real NVML; the window reaches back to
  // lastSeenTimeStamp (at most 10 s, about what a driver keeps; 0 means the last second).
  const int64_t now_us = RealtimeUs();
  const int64_t now_ns = NowNs();
  constexpr int64_t kDefaultWindowUs = 1'000'000;
  constexpr int64_t kMaxWindowUs = 10'000'000;
  int64_t window_us = now_us - static_cast<int64_t>(lastSeenTimeStamp);
  if (lastSeenTimeStamp == 0) {
    window_us = kDefaultWindowUs;
  } else if (window_us > kMaxWindowUs) {
    window_us = kMaxWindowUs;
  }
  if (window_us <= 0) return NVML_ERROR_NOT_FOUND;
  int64_t device_busy = 0;
  auto busy =
      s->shared->BusyByProcess(device->index, now_ns - window_us * 1000, now_ns, &device_busy);
  if (busy.empty()) return NVML_ERROR_NOT_FOUND;
  const auto n = static_cast<unsigned int>(busy.size());
  if (utilization == nullptr || *processSamplesCount < n) {
    *processSamplesCount = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  *processSamplesCount = n;
  for (unsigned int i = 0; i < n; ++i) {
    utilization[i] = nvmlProcessUtilizationSample_t{};
    utilization[i].pid = static_cast<unsigned int>(busy[i].pid + s->config.host_pid_offset);
    utilization[i].timeStamp = static_cast<unsigned long long>(now_us);
    const int64_t pct = (busy[i].busy_ns * 100 + window_us * 500) / (window_us * 1000);
    utilization[i].smUtil = static_cast<unsigned int>(std::clamp<int64_t>(pct, 0, 100));
  }
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  constexpr int64_t kWindowNs = 1'000'000'000;
  const int64_t now = NowNs();
  int64_t busy = 0;
  s->shared->BusyByProcess(device->index, now - kWindowNs, now, &busy);
  utilization->gpu = static_cast<unsigned int>(
      std::clamp<int64_t>((busy * 100 + kWindowNs / 2) / kWindowNs, 0, 100));
  utilization->memory = 0;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  FillPci(device->index, pci);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return nvmlDeviceGetPciInfo_v3(device, pci);
}

nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t* pathInfo) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device1, &s); rc != NVML_SUCCESS) return rc;
  if (auto rc = CheckDevice(device2, &s); rc != NVML_SUCCESS) return rc;
  if (pathInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *pathInfo = device1 == device2 ? NVML_TOPOLOGY_INTERNAL
                                 : static_cast<nvmlGpuTopologyLevel_t>(
                                       s->config.links[device1->index][device2->index].level);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                    nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t* p2pStatus) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device1, &s); rc != NVML_SUCCESS) return rc;
  if (auto rc = CheckDevice(device2, &s); rc != NVML_SUCCESS) return rc;
  if (p2pStatus == nullptr || p2pIndex >= NVML_P2P_CAPS_INDEX_UNKNOWN) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const GpuLink& link = s->config.links[device1->index][device2->index];
  bool ok = device1 != device2 && PeerCapable(link);
  if (p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK) ok = device1 != device2 && link.nvlinks > 0;
  *p2pStatus = ok ? NVML_P2P_STATUS_OK : NVML_P2P_STATUS_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive) {
  NvmlState* s = nullptr;
  if (auto rc = CheckLink(device, link, &s); rc != NVML_SUCCESS) return rc;
  if (isActive == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *isActive = NvLinkPeer(s->config, device->index, link) >= 0 ? NVML_FEATURE_ENABLED
                                                              : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci) {
  NvmlState* s = nullptr;
  if (auto rc = CheckLink(device, link, &s); rc != NVML_SUCCESS) return rc;
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const int peer = NvLinkPeer(s->config, device->index, link);
  if (peer < 0) return NVML_ERROR_NOT_SUPPORTED;  // an inactive link has no far end
  FillPci(peer, pci);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link,
                                              nvmlPciInfo_t* pci) {
  return nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, pci);
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link,
                                                 nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType) {
  NvmlState* s = nullptr;
  if (auto rc = CheckLink(device, link, &s); rc != NVML_SUCCESS) return rc;
  if (pNvLinkDeviceType == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (NvLinkPeer(s->config, device->index, link) < 0) return NVML_ERROR_NOT_SUPPORTED;
  *pNvLinkDeviceType = NVML_NVLINK_DEVICE_TYPE_GPU;  // direct GPU-GPU links, no NVSwitch
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto owned = std::make_unique<nvmlEventSet_st>();
  *set = owned.get();
  s.event_sets.emplace(owned.get(), std::move(owned));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  if (eventTypes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *eventTypes = kSupportedEvents;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) {
  NvmlState* s = nullptr;
  if (auto rc = CheckDevice(device, &s); rc != NVML_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(s->mu);
  if (!s->event_sets.contains(set)) return NVML_ERROR_INVALID_ARGUMENT;
  if (eventTypes == 0 || (eventTypes & ~kSupportedEvents) != 0) return NVML_ERROR_NOT_SUPPORTED;
  for (auto& reg : set->registrations) {
    if (reg.index == device->index) {
      reg.mask |= eventTypes;
      return NVML_SUCCESS;
    }
  }
  // Only events posted from now on are delivered.
  set->registrations.push_back({device->index, eventTypes, s->shared->LastEventSeq(device->index)});
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) {
  NvmlState& s = State();
  if (data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeoutms) * 1'000'000;
  constexpr int64_t kPollNs = 2'000'000;  // events come from other processes: poll the state
  while (true) {
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
      if (!s.event_sets.contains(set)) return NVML_ERROR_INVALID_ARGUMENT;
      if (TakeEvent(s, set, data)) return NVML_SUCCESS;
    }
    const int64_t now = NowNs();
    if (now >= deadline) return NVML_ERROR_TIMEOUT;
    SleepUntilNs(std::min(deadline, now + kPollNs));
  }
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return nvmlEventSetWait_v2(set, data, timeoutms);
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (s.event_sets.erase(set) == 0) return NVML_ERROR_INVALID_ARGUMENT;
  return NVML_SUCCESS;
}

nvmlReturn_t vgpuFakeInjectXid(unsigned int index, unsigned long long xid) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= s.config.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  s.shared->PostEvent(static_cast<int>(index), nvmlEventTypeXidCriticalError, xid);
  return NVML_SUCCESS;
}

nvmlReturn_t vgpuFakeSetGpuLost(unsigned int index, int lost) {
  NvmlState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= s.config.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  s.shared->SetLost(static_cast<int>(index), lost != 0);
  return NVML_SUCCESS;
}

}  // extern "C"
