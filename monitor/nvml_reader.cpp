#include "monitor/nvml_reader.h"

#include <algorithm>
#include <ctime>
#include <vector>

#include "nvml/nvml_library.h"

namespace vgpu::monitor {
namespace {

using nvml::Device;
using nvml::kErrorInsufficientSize;
using nvml::kErrorNotFound;
using nvml::kSuccess;
using nvml::Return;

unsigned long long RealtimeUs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<unsigned long long>(ts.tv_sec) * 1'000'000ULL +
         static_cast<unsigned long long>(ts.tv_nsec) / 1000ULL;
}

// Calls an NVML list function until the buffer is large enough (the list may grow between calls).
template <typename T, typename Call>
Return FetchList(Call call, std::vector<T>& out) {
  unsigned int count = 0;
  Return rc = call(&count, nullptr);
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
  explicit DlNvmlReader(std::unique_ptr<nvml::Library> nvml)
      : nvml_(std::move(nvml)), api_(nvml_->api()) {}

  Result<NvmlReading> Read() override {
    unsigned int count = 0;
    if (auto rc = api_.get_count(&count); rc != kSuccess) {
      return Unavailable(nvml_->Error("nvmlDeviceGetCount", rc));
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
  // The GPU's figures; nullopt when it cannot even be named. `problem`: what could not be read.
  std::optional<NvmlGpu> ReadGpu(unsigned int index, std::string* problem) {
    Device dev = nullptr;
    if (auto rc = api_.handle_by_index(index, &dev); rc != kSuccess) {
      *problem = nvml_->Error("nvmlDeviceGetHandleByIndex", rc);
      return std::nullopt;
    }
    char uuid[96] = {};
    char name[96] = {};
    if (auto rc = api_.get_uuid(dev, uuid, sizeof uuid); rc != kSuccess) {
      *problem = nvml_->Error("nvmlDeviceGetUUID", rc);
      return std::nullopt;
    }
    NvmlGpu g;
    g.index = static_cast<int>(index);
    g.uuid = uuid;
    if (auto rc = api_.get_name(dev, name, sizeof name); rc == kSuccess) {
      g.name = name;
    } else {
      *problem = nvml_->Error("nvmlDeviceGetName", rc);
    }
    nvml::Memory mem{};
    if (auto rc = api_.get_memory(dev, &mem); rc == kSuccess) {
      g.memory_total = mem.total;
      g.memory_used = mem.used;
    } else {
      *problem = nvml_->Error("nvmlDeviceGetMemoryInfo", rc);
    }
    nvml::Utilization util{};
    if (api_.get_utilization != nullptr && api_.get_utilization(dev, &util) == kSuccess) {
      g.utilization = util.gpu;
      g.memory_utilization = util.memory;
    }
    ReadProcessUtilization(dev, index, g);
    ReadComputeProcesses(dev, g);
    return g;
  }

  void ReadProcessUtilization(Device dev, unsigned int index, NvmlGpu& g) {
    if (api_.get_process_utilization == nullptr) return;
    const unsigned long long now_us = RealtimeUs();
    std::vector<nvml::ProcessSample> samples;
    const Return rc = FetchList<nvml::ProcessSample>(
        [&](unsigned int* n, nvml::ProcessSample* out) {
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
    for (const nvml::ProcessSample& s : samples) {
      auto& [sum, n] = sums[static_cast<int32_t>(s.pid)];
      sum += s.sm_util;
      ++n;
      newest = std::max(newest, s.time_stamp);
    }
    for (const auto& [pid, sum_n] : sums) g.sm_util_by_pid[pid] = sum_n.first / sum_n.second;
    last_seen_us_[index] = newest != 0 ? newest : now_us;
  }

  void ReadComputeProcesses(Device dev, NvmlGpu& g) const {
    std::vector<int32_t> pids;
    if (api_.get_processes != nullptr) {
      std::vector<nvml::ProcessInfo> infos;
      if (FetchList<nvml::ProcessInfo>(
              [&](unsigned int* n, nvml::ProcessInfo* out) {
                return api_.get_processes(dev, n, out);
              },
              infos) != kSuccess) {
        return;
      }
      for (const auto& p : infos) pids.push_back(static_cast<int32_t>(p.pid));
    } else if (api_.get_processes_v1 != nullptr) {
      std::vector<nvml::ProcessInfoV1> infos;
      if (FetchList<nvml::ProcessInfoV1>(
              [&](unsigned int* n, nvml::ProcessInfoV1* out) {
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

  std::unique_ptr<nvml::Library> nvml_;
  const nvml::Api& api_;
  std::vector<unsigned long long>
      last_seen_us_;  // per GPU: where the next utilization window starts
};

}  // namespace

Result<std::unique_ptr<NvmlReader>> NvmlReader::Open(const std::string& library) {
  auto nvml = nvml::Library::Open(library,
                                  "is the NVIDIA driver visible to the monitor? An empty NVML "
                                  "library runs without host GPU figures");
  if (!nvml.ok()) return nvml.status();
  return std::unique_ptr<NvmlReader>(std::make_unique<DlNvmlReader>(std::move(*nvml)));
}

}  // namespace vgpu::monitor
