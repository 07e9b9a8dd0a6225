#pragma once

// The host's processes, as far as matching region slots needs them (core/monitor/host_pid_match.h).
// An interface so that tests can present processes as if they lived in another PID namespace; the
// real one reads <proc_root> (the host's /proc: the monitor runs with hostPID).

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/monitor/host_process.h"
#include "core/monitor/tick_plan.h"

namespace vgpu::monitor {

struct ProcScanRequest {
  std::set<int32_t> ns_pids;  // the pids of the regions' live-looking slots
  std::set<FileId> regions;   // the region files
};

class HostProcessSource {
 public:
  virtual ~HostProcessSource() = default;
  // The host processes whose PID in their own namespace (last NSpid entry) is in
  // `request.ns_pids`, each with its start time and which of `request.regions` it maps.
  // Unavailable when the table cannot be read at all (then no slot can be checked).
  virtual Result<std::vector<HostProcess>> Scan(const ProcScanRequest& request) = 0;
  // One host process's state and start time (/proc/<host_pid>/stat): nullopt when there is no
  // such process; an error when it cannot be told (the engine then scans for the slot instead).
  // This default cannot tell: a source without it is scanned for every slot, every tick.
  virtual Result<std::optional<HostStat>> Stat(int32_t host_pid);
};

// Scan reads <proc_root>/<pid>/status for every process, and /stat and /maps only for the processes
// whose PID fits some slot asked about; Stat reads one <proc_root>/<pid>/stat.
std::unique_ptr<HostProcessSource> NewProcfsSource(std::string proc_root);

}  // namespace vgpu::monitor
