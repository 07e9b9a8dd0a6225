#pragma once

// What the node monitor knows about one node at one moment: its GPUs and, per GPU, the containers
// using it with their memory, compute and processes. The monitor builds it every tick; the metrics
// page, the JSON API (/api/v1/snapshot) and `vgpu top` all read this one structure, so that the
// three views cannot disagree. The JSON form is the wire format between the monitor and
// `vgpu top` (snapshot_json.h).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vgpu::monitor {

// The region flag policy `default` reads (VGPU_SM_SHARING_* in vgpu/region_layout.h).
enum class Sharing { kUnknown, kShared, kAlone };
// GPU_CORE_UTILIZATION_POLICY of the container's processes.
enum class CorePolicy { kDefault, kForce, kDisable, kMps };
// What the monitor can read of a container's folder (core/monitor/container_folder.h):
//  ok          every region file there is read (or there is none yet: no CUDA process ran);
//  pending     a region file is being created (empty, or not laid out yet);
//  unusable    a region file is refused: corrupt (a scribbled header or device record), not a
//              vgpu region, a link, not a regular file, hard-linked. Its processes are not seen
//              and libvgpu in the container may be enforcing limits per process only;
//  over_limits the folder holds more entries or region files than the monitor reads: the rest
//              is ignored (a tenant flooding its folder).
enum class ContainerState { kOk, kPending, kUnusable, kOverLimits };

const char* SharingName(Sharing s);                // "unknown", "shared", "alone"
const char* CorePolicyName(CorePolicy p);          // "default", "force", "disable", "mps"
const char* ContainerStateName(ContainerState s);  // "ok", "pending", "unusable", "over_limits"

struct ProcessView {
  int32_t pid = 0;            // in the container's PID namespace
  int32_t host_pid = 0;       // 0 = not matched (yet)
  uint64_t memory_bytes = 0;  // tracked allocations + context/module overhead on this GPU
};

// One container's use of one GPU.
struct ContainerGpuView {
  std::string namespace_name;  // empty while the pod is not known to the monitor
  std::string pod;
  std::string pod_uid;
  std::string container;
  int vdevice_index = 0;  // the device's index among the container's devices (region record)
  uint64_t memory_used_bytes = 0;
  uint64_t memory_limit_bytes = 0;   // 0 = unlimited, unless no_memory
  bool no_memory = false;            // the limit is 0 bytes: libvgpu refuses every allocation there
  uint64_t memory_buffer_bytes = 0;  // tracked allocations
  uint64_t memory_context_bytes = 0;  // measured context, module and pool memory
  int sm_limit_percent = 0;           // 0 = unlimited
  double utilization_percent = 0;     // of the whole GPU, over the last tick
  Sharing sharing = Sharing::kUnknown;
  CorePolicy policy = CorePolicy::kDefault;
  std::optional<double> last_kernel_seconds_ago;  // none when no kernel was seen
  std::vector<ProcessView> processes;
};

struct GpuView {
  int index = 0;  // NVML index on the host
  std::string uuid;
  std::string type;  // HAMi's device_type: "NVIDIA-" + model unless the model starts with NVIDIA
  uint64_t memory_total_bytes = 0;
  uint64_t memory_used_bytes = 0;
  std::optional<double> utilization_percent;         // NVML, 0-100; none when not supported
  std::optional<double> memory_utilization_percent;  // memory controller, 0-100
  std::vector<ContainerGpuView> containers;
};

// The wall time of the monitor's ticks since it started, as a histogram
// (vgpu_monitor_tick_duration_seconds). Not part of the JSON form.
struct TickDurations {
  static constexpr std::array<double, 12> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1,    2.5};
  std::array<uint64_t, kBounds.size()> cumulative{};  // observations <= kBounds[i]
  uint64_t count = 0;
  double sum_seconds = 0;

  void Observe(double seconds) {
    seconds = seconds > 0 ? seconds : 0;
    for (size_t i = 0; i < kBounds.size(); ++i) {
      if (seconds <= kBounds[i]) ++cumulative[i];
    }
    ++count;
    sum_seconds += seconds;
  }
};

// One container folder the monitor watches, whether or not a GPU view came from it: how usable
// its regions are. Containers by namespace, pod, container, pod UID.
struct ContainerStatusView {
  std::string namespace_name;  // empty while the pod is not known to the monitor
  std::string pod;
  std::string pod_uid;
  std::string container;
  ContainerState state = ContainerState::kOk;
  int regions = 0;      // region files read
  std::string problem;  // what is wrong ("" when ok), printable ASCII, at most a few hundred bytes
};

struct NodeSnapshot {
  std::string node;
  int64_t time_unix_ms = 0;
  std::vector<GpuView> gpus;
  std::vector<ContainerStatusView> containers;
  TickDurations tick_durations;  // up to the tick that made this snapshot
};

}  // namespace vgpu::monitor
