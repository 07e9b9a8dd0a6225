#pragma once

// Where GPUs come from: NVML on a real node, a flag-described set for machines without GPUs.
// The plugin only sees this interface, so several plugins (the simulated cluster) can each own
// their own backend in one process.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/codec/gpu_topology.h"

namespace vgpu::deviceplugin {

struct GpuDevice {
  std::string uuid;
  int index = 0;  // NVML index
  std::string model;
  int64_t memory_mib = 0;
  int numa = 0;  // -1 unknown is reported as 0, as HAMi does
};

// A critical XID event reported by the driver for one GPU.
struct XidEvent {
  std::string uuid;
  uint64_t xid = 0;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual Result<std::vector<GpuDevice>> Discover() = 0;
  // Blocks up to `timeout` for the next XID event; nullopt when none arrived. Backends without
  // event support simply wait out the timeout.
  virtual Result<std::optional<XidEvent>> WaitXid(std::chrono::milliseconds timeout) = 0;
  // Whether the GPU answers queries at all (a device that fell off the bus does not); used to
  // let a device recover after an XID once it is healthy again.
  virtual bool Responds(const std::string& uuid) = 0;
  // How the GPUs are connected, for hami.io/node-nvidia-score (every discovered GPU); nullopt
  // when the backend cannot tell.
  virtual Result<std::optional<codec::GpuTopology>> Topology() {
    return std::optional<codec::GpuTopology>();
  }
};

}  // namespace vgpu::deviceplugin
