#pragma once

// The host's processes, as far as matching region slots needs them (core/monitor/host_pid_match.h).
// An interface so that tests can present processes as if they lived in another PID namespace; the
// real one reads <proc_root> (the host's /proc: the monitor runs with hostPID).

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/monitor/host_process.h"

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
};

// Reads <proc_root>/<pid>/status for every process, and /stat and /maps only for the processes
// whose PID fits some slot, so a tick costs one small read per host process.
std::unique_ptr<HostProcessSource> NewProcfsSource(std::string proc_root);

}  // namespace vgpu::monitor
