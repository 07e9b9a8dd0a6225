#pragma once

// NVML, dlopen'ed: the one loader of libnvidia-ml for every component that reads the host's GPUs
// (the device plugin's backend, the node monitor's reader, `vgpu run --gpus`). Loading at run
// time lets the binaries start on machines without a driver (the device plugin's --fake-gpus,
// the monitor without host figures). No nvml.h ships with the toolkit headers we build against:
// the few types used are declared here with the public API's layouts.

#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace vgpu::nvml {

using Return = int;  // nvmlReturn_t
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorTimeout = 10;
using Device = struct nvmlDevice_st*;
using EventSet = struct nvmlEventSet_st*;
inline constexpr unsigned long long kEventXidCritical = 0x8ULL;  // nvmlEventTypeXidCriticalError

inline constexpr unsigned int kNvLinkMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS
inline constexpr int kFeatureEnabled = 1;            // nvmlEnableState_t
inline constexpr int kNvLinkDeviceTypeSwitch = 2;    // NVML_NVLINK_DEVICE_TYPE_SWITCH

struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct Utilization {  // nvmlUtilization_t
  unsigned int gpu, memory;
};
struct ProcessInfo {  // nvmlProcessInfo_v2_t, the layout of the _v2 and _v3 calls
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
struct ProcessInfoV1 {  // nvmlProcessInfo_v1_t
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
struct ProcessSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long time_stamp;  // CPU wall clock, µs
  unsigned int sm_util, mem_util, enc_util, dec_util;
};
struct PciInfo {  // nvmlPciInfo_t (v3 layout)
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

// The library's entry points. The first group is required (Open fails without it); the others
// are nullptr when the library lacks them (older drivers, stubs, the fake driver).
struct Api {
  Return (*init)();
  Return (*shutdown)();
  Return (*get_count)(unsigned int*);
  Return (*handle_by_index)(unsigned int, Device*);
  Return (*get_uuid)(Device, char*, unsigned int);
  Return (*get_name)(Device, char*, unsigned int);
  Return (*get_memory)(Device, Memory*);
  // Optional.
  const char* (*error_string)(Return);
  Return (*handle_by_uuid)(const char*, Device*);
  Return (*get_pci)(Device, PciInfo*);
  Return (*get_utilization)(Device, Utilization*);
  Return (*get_process_utilization)(Device, ProcessSample*, unsigned int*, unsigned long long);
  Return (*get_processes)(Device, unsigned int*, ProcessInfo*);  // _v3 or _v2
  Return (*get_processes_v1)(Device, unsigned int*, ProcessInfoV1*);
  Return (*event_set_create)(EventSet*);
  Return (*register_events)(Device, unsigned long long, EventSet);
  Return (*event_set_wait)(EventSet, EventData*, unsigned int);
  Return (*event_set_free)(EventSet);
  // GPU interconnect (the device plugin's hami.io/node-nvidia-score). The enums
  // nvmlGpuTopologyLevel_t, nvmlEnableState_t, nvmlIntNvLinkDeviceType_t are ints.
  Return (*get_topology_common_ancestor)(Device, Device, int*);
  Return (*get_nvlink_state)(Device, unsigned int, int*);
  Return (*get_nvlink_remote_pci)(Device, unsigned int, PciInfo*);  // _v2 or the first
  Return (*get_nvlink_remote_device_type)(Device, unsigned int, int*);
};

// An initialised NVML. Destruction calls nvmlShutdown; the library stays mapped (driver
// libraries keep process-wide state that is not safe to unmap).
class Library {
 public:
  // dlopens `path` ("libnvidia-ml.so.1" finds the driver's), binds the entry points and calls
  // nvmlInit. Unavailable otherwise, with the reason; a failed load also carries `hint`, what the
  // caller's user can do about it (e.g. "Use --fake-gpus on machines without GPUs").
  static Result<std::unique_ptr<Library>> Open(const std::string& path, const std::string& hint);

  explicit Library(Api api) : api_(api) {}
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const Api& api() const { return api_; }
  // "NVML nvmlDeviceGetCount failed: <nvmlErrorString, or the code>".
  std::string Error(const char* call, Return rc) const;

 private:
  Api api_;
};

// A GPU as NVML numbers and names it.
struct GpuId {
  int index = 0;
  std::string uuid;
  friend bool operator==(const GpuId&, const GpuId&) = default;
};

// Every GPU of the host, in NVML index order.
Result<std::vector<GpuId>> ListGpus(const Library& nvml);

}  // namespace vgpu::nvml
