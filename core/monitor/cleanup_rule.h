#pragma once

// When the monitor removes a container's directory. The device plugin creates one per container at
// Allocate and nobody else removes it; the monitor does once the pod is gone. A directory goes only
// when all of these hold:
//   - the pod directory is synced (a pod missing from a stale or failing view is not gone),
//   - the pod's UID is not in it,
//   - no live process uses one of its regions (matched or unverified slots),
//   - neither the directory nor anything in it changed for the grace period (a directory made by
//     an Allocate for a pod the view has not caught up with yet is fresh).

#include <chrono>

namespace vgpu::monitor {

struct CleanupFacts {
  bool pods_synced = false;
  bool pod_exists = true;
  bool in_use = true;
  std::chrono::system_clock::time_point newest_change;  // newest mtime of the directory and files
};

bool ShouldRemoveContainerDir(const CleanupFacts& facts, std::chrono::system_clock::time_point now,
                              std::chrono::seconds grace);

}  // namespace vgpu::monitor
