#include "monitor/nvml_reader.h"

#include <dlfcn.h>

#include <algorithm>
#include <ctime>
#include <vector>

namespace vgpu::monitor {
namespace {

// Minimal NVML declarations (no nvml.h ships with the toolkit headers we build against); layouts
// of the public API.
using nvmlReturn_t = int;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kErrorNotFound = 6;
constexpr nvmlReturn_t kErrorInsufficientSize = 7;
using nvmlDevice_t = struct nvmlDevice_st*;

struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_v2_t, the layout of the _v2 and _v3 calls
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
struct NvmlProcessInfoV1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
struct NvmlProcessSample {  // nvmlProcessUtilizationSample_t
  unsigned int pid;
  unsigned long long time_stamp;  // CPU wall clock, µs
  unsigned int sm_util, mem_util, enc_util, dec_util;
};

struct NvmlApi {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  const char* (*error_string)(nvmlReturn_t);
  nvmlReturn_t (*get_count)(unsigned int*);
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned int);
  nvmlReturn_t (*get_memory)(nvmlDevice_t, NvmlMemory*);
  // Optional.
  nvmlReturn_t (*get_utilization)(nvmlDevice_t, NvmlUtilization*);
  nvmlReturn_t (*get_process_utilization)(nvmlDevice_t, NvmlProcessSample*, unsigned int*,
                                          unsigned long long);
  nvmlReturn_t (*get_processes)(nvmlDevice_t, unsigned int*, NvmlProcessInfo*);
  nvmlReturn_t (*get_processes_v1)(nvmlDevice_t, unsigned int*, NvmlProcessInfoV1*);
};

template <typename Fn>
bool Bind(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  return fn != nullptr;
}

unsigned long long RealtimeUs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1'000'000ULL +
         static_cast<unsigned long long>(ts.tv_nsec) / 1000ULL;
}

// Calls an NVML list function until the buffer is large enough (the list may grow between calls).
template <typename T, typename Call>
nvmlReturn_t FetchList(Call call, std::vector<T>& out) {
  unsigned int count = 0;
  nvmlReturn_t rc = call(&count, nullptr);
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (rc == kSuccess && count == 0) {
      out.clear();
      return kSuccess;
    }
    if (rc != kSuccess && rc != kErrorInsufficientSize) return rc;
    out.resize(count + 8);
    count = static_cast<unsigned int>(out.size());
    rc = call(&count, out.data());
    if (rc == kSuccess) {
      out.resize(count);
      return kSuccess;
    }
  }
  return rc;
}

class DlNvmlReader : public NvmlReader {
 public:
  explicit DlNvmlReader(NvmlApi api) : api_(api) {}
  ~DlNvmlReader() override {
    api_.shutdown();
    // The library stays loaded: driver libraries keep process-wide state that is not safe to
    // unmap.
  }
  DlNvmlReader(const DlNvmlReader&) = delete;
  DlNvmlReader& operator=(const DlNvmlReader&) = delete;

  Result<NvmlReading> Read() override {
    unsigned int count = 0;
    if (auto rc = api_.get_count(&count); rc != kSuccess) {
      return Unavailable(Error("nvmlDeviceGetCount", rc));
    }
    if (last_seen_us_.size() < count) last_seen_us_.resize(count, 0);
    NvmlReading reading;
    for (unsigned int i = 0; i < count; ++i) {
      std::string problem;
      auto gpu = ReadGpu(i, &problem);
      if (gpu) reading.gpus.push_back(std::move(*gpu));
      if (!problem.empty()) reading.problems.push_back("GPU " + std::to_string(i) + ": " + problem);
    }
    return reading;
  }

 private:
  std::string Error(const char* call, nvmlReturn_t rc) const {
    const char* text = api_.error_string != nullptr ? api_.error_string(rc) : nullptr;
    return std::string(call) +
           " failed: " + (text != nullptr ? text : "error " + std::to_string(rc));
  }

  // The GPU's figures; nullopt when it cannot even be named. `problem`: what could not be read.
  std::optional<NvmlGpu> ReadGpu(unsigned int index, std::string* problem) {
    nvmlDevice_t dev = nullptr;
    if (auto rc = api_.handle_by_index(index, &dev); rc != kSuccess) {
      *problem = Error("nvmlDeviceGetHandleByIndex", rc);
      return std::nullopt;
    }
    char uuid[96] = {};
    char name[96] = {};
    if (auto rc = api_.get_uuid(dev, uuid, sizeof uuid); rc != kSuccess) {
      *problem = Error("nvmlDeviceGetUUID", rc);
      return std::nullopt;
    }
    NvmlGpu g;
    g.index = static_cast<int>(index);
    g.uuid = uuid;
    if (auto rc = api_.get_name(dev, name, sizeof name); rc == kSuccess) {
      g.name = name;
    } else {
      *problem = Error("nvmlDeviceGetName", rc);
    }
    NvmlMemory mem{};
    if (auto rc = api_.get_memory(dev, &mem); rc == kSuccess) {
      g.memory_total = mem.total;
      g.memory_used = mem.used;
    } else {
      *problem = Error("nvmlDeviceGetMemoryInfo", rc);
    }
    NvmlUtilization util{};
    if (api_.get_utilization != nullptr && api_.get_utilization(dev, &util) == kSuccess) {
      g.utilization = util.gpu;
      g.memory_utilization = util.memory;
    }
    ReadProcessUtilization(dev, index, g);
    ReadComputeProcesses(dev, g);
    return g;
  }

  void ReadProcessUtilization(nvmlDevice_t dev, unsigned int index, NvmlGpu& g) {
    if (api_.get_process_utilization == nullptr) return;
    const unsigned long long now_us = RealtimeUs();
    std::vector<NvmlProcessSample> samples;
    const nvmlReturn_t rc = FetchList<NvmlProcessSample>(
        [&](unsigned int* n, NvmlProcessSample* out) {
          return api_.get_process_utilization(dev, out, n, last_seen_us_[index]);
        },
        samples);
    if (rc != kSuccess) {
      // NOT_FOUND: nothing ran since the last read. Either way the next window starts now.
      if (rc == kErrorNotFound) last_seen_us_[index] = now_us;
      return;
    }
    // A driver may return several samples of one process in the window: their mean is its share.
    std::map<int32_t, std::pair<double, int>> sums;
    unsigned long long newest = 0;
    for (const NvmlProcessSample& s : samples) {
      auto& [sum, n] = sums[static_cast<int32_t>(s.pid)];
      sum += s.sm_util;
      ++n;
      newest = std::max(newest, s.time_stamp);
    }
    for (const auto& [pid, sum_n] : sums) g.sm_util_by_pid[pid] = sum_n.first / sum_n.second;
    last_seen_us_[index] = newest != 0 ? newest : now_us;
  }

  void ReadComputeProcesses(nvmlDevice_t dev, NvmlGpu& g) const {
    std::vector<int32_t> pids;
    if (api_.get_processes != nullptr) {
      std::vector<NvmlProcessInfo> infos;
      if (FetchList<NvmlProcessInfo>(
              [&](unsigned int* n, NvmlProcessInfo* out) {
                return api_.get_processes(dev, n, out);
              },
              infos) != kSuccess) {
        return;
      }
      for (const auto& p : infos) pids.push_back(static_cast<int32_t>(p.pid));
    } else if (api_.get_processes_v1 != nullptr) {
      std::vector<NvmlProcessInfoV1> infos;
      if (FetchList<NvmlProcessInfoV1>(
              [&](unsigned int* n, NvmlProcessInfoV1* out) {
                return api_.get_processes_v1(dev, n, out);
              },
              infos) != kSuccess) {
        return;
      }
      for (const auto& p : infos) pids.push_back(static_cast<int32_t>(p.pid));
    } else {
      return;
    }
    g.compute_pids = std::move(pids);
  }

  NvmlApi api_;
  std::vector<unsigned long long>
      last_seen_us_;  // per GPU: where the next utilization window starts
};

}  // namespace

Result<std::unique_ptr<NvmlReader>> NvmlReader::Open(const std::string& library) {
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = ::dlerror();
    return Unavailable("cannot load " + library + " (" + (err != nullptr ? err : "unknown error") +
                       "); is the NVIDIA driver visible to the monitor? An empty NVML library "
                       "runs without host GPU figures");
  }
  NvmlApi api{};
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
    return Unavailable(library + " lacks a required NVML function; the driver is too old");
  }
  Bind(lib, "nvmlErrorString", api.error_string);
  Bind(lib, "nvmlDeviceGetUtilizationRates", api.get_utilization);
  Bind(lib, "nvmlDeviceGetProcessUtilization", api.get_process_utilization);
  if (!Bind(lib, "nvmlDeviceGetComputeRunningProcesses_v3", api.get_processes) &&
      !Bind(lib, "nvmlDeviceGetComputeRunningProcesses_v2", api.get_processes)) {
    Bind(lib, "nvmlDeviceGetComputeRunningProcesses", api.get_processes_v1);
  }
  if (auto rc = api.init(); rc != kSuccess) {
    const char* text = api.error_string != nullptr ? api.error_string(rc) : nullptr;
    (void)::dlclose(lib);
    return Unavailable("nvmlInit failed: " +
                       (text != nullptr ? std::string(text) : "error " + std::to_string(rc)));
  }
  return std::unique_ptr<NvmlReader>(std::make_unique<DlNvmlReader>(api));
}

}  // namespace vgpu::monitor
