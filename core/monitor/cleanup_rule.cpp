#include "core/monitor/cleanup_rule.h"

namespace vgpu::monitor {

bool ShouldRemoveContainerDir(const CleanupFacts& facts, std::chrono::system_clock::time_point now,
                              std::chrono::seconds grace) {
  return facts.pods_synced && !facts.pod_exists && !facts.in_use &&
         now - facts.newest_change >= grace;
}

}  // namespace vgpu::monitor
