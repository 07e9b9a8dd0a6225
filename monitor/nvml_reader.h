#pragma once

// The host GPU figures the monitor takes from NVML (dlopen'ed, like the device plugin's backend):
// per GPU its index, UUID, name, memory, utilization, the processes holding a context on it and
// each process's SM utilization since the previous read. NVML names processes by host PID.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace vgpu::monitor {

struct NvmlGpu {
  int index = 0;
  std::string uuid;
  std::string name;
  uint64_t memory_total = 0;
  uint64_t memory_used = 0;
  std::optional<double> utilization;         // nvmlDeviceGetUtilizationRates: gpu
  std::optional<double> memory_utilization;  // ... memory
  // nvmlDeviceGetProcessUtilization since the previous read: mean smUtil per host PID.
  std::map<int32_t, double> sm_util_by_pid;
  // nvmlDeviceGetComputeRunningProcesses: host PIDs with a context; none when NVML cannot say.
  std::optional<std::vector<int32_t>> compute_pids;
};

struct NvmlReading {
  std::vector<NvmlGpu> gpus;
  std::vector<std::string> problems;  // a GPU or a figure that could not be read (for the log)
};

class NvmlReader {
 public:
  // dlopens `library` and initializes NVML; Unavailable with the reason otherwise.
  static Result<std::unique_ptr<NvmlReader>> Open(const std::string& library);
  virtual ~NvmlReader() = default;
  // One reading of every GPU. An error only when NVML cannot even count them.
  virtual Result<NvmlReading> Read() = 0;
};

}  // namespace vgpu::monitor
