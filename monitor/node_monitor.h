#pragma once

// The node monitor's engine: every tick it finds each container's region under the directory the
// device plugin mounts (`<root>/containers/<pod-uid>_<container>/*.cache`), matches the
// containers' processes to host PIDs and writes them into the regions (libvgpu charges context
// memory through them), decides for each GPU whether it is shared and writes the flag policy
// `default` reads (alone: limit lifted; two or more containers: limits hold), reads host GPU
// figures from NVML, removes directories of pods that are gone, and keeps the result as a
// NodeSnapshot for the metrics page, the JSON API and `vgpu top`.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/base/log.h"
#include "core/base/status.h"
#include "core/monitor/container_folder.h"
#include "core/monitor/snapshot.h"
#include "monitor/pod_directory.h"

namespace vgpu::monitor {

struct NodeMonitorOptions {
  std::string node_name;
  // The device plugin's hook directory: regions live under <vgpu_dir>/containers/ (HAMi's
  // HOOK_PATH, default /usr/local/vgpu).
  std::string vgpu_dir = "/usr/local/vgpu";
  std::chrono::milliseconds tick{1000};
  // A directory whose pod is gone is removed once it has not changed for this long (HAMi: 5 min).
  std::chrono::seconds cleanup_grace{300};
  // Entries of the folders of gone pods removed per tick at most: a folder of a million files is
  // removed over many ticks instead of stopping one for seconds (tests lower it).
  size_t max_removals_per_tick = kMaxRemovalsPerTick;
  // Where host processes are read (tests point it elsewhere).
  std::string proc_root = "/proc";
  // libnvidia-ml.so.1 to dlopen; empty: no host GPU figures (the snapshot lists GPUs from the
  // regions only).
  std::string nvml_library = "libnvidia-ml.so.1";
  // Where the engine's log lines go (one line each, no newline): problems as warnings, what it
  // did (a folder removed) as information; empty: core/base/log.h. Problems that last (a bad
  // region file, an unreadable directory) are logged when they appear or change, not every tick.
  std::function<void(log::Level, const std::string&)> log;
};

// The host's processes as the engine sees them (monitor/proc_table.h).
class HostProcessSource;

class NodeMonitor {
 public:
  // Starts the tick thread after one synchronous tick. `pods` outlives the monitor.
  // Fails when the NVML library is named but cannot be loaded or initialized.
  static Result<std::unique_ptr<NodeMonitor>> Start(NodeMonitorOptions options,
                                                    const PodDirectory* pods);
  // The same with another source of host processes than <proc_root> (tests: processes presented
  // as if they ran in another PID namespace).
  static Result<std::unique_ptr<NodeMonitor>> Start(NodeMonitorOptions options,
                                                    const PodDirectory* pods,
                                                    std::unique_ptr<HostProcessSource> procs);
  virtual ~NodeMonitor() = default;
  // The result of the last tick.
  virtual NodeSnapshot Snapshot() const = 0;
  // Runs one tick now (tests; the tick thread keeps running).
  virtual void TickNow() = 0;
  virtual void Stop() = 0;
};

}  // namespace vgpu::monitor
