#pragma once

// Device health from XID events. HAMi (like NVIDIA's plugin) marks a GPU unhealthy on a
// critical XID and never lets it recover; here a GPU recovers once it answers queries again and
// no critical XID has arrived for `recovery_quiet`. Pure: the caller supplies the clock.

#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "core/base/status.h"

namespace vgpu::deviceplugin {

// XIDs caused by applications (bad kernels, user-triggered resets), not by the GPU:
// 13 graphics engine exception, 31 MMU fault, 43 GPU stopped processing, 45 preemptive cleanup,
// 68 video processor exception, 109 context switch timeout. The usual set kept healthy.
std::set<uint64_t> DefaultIgnoredXids();

// "13,31,43" -> set; empty text -> empty set. Errors name the bad item.
Result<std::set<uint64_t>> ParseXidList(const std::string& text);

class HealthTracker {
 public:
  using Clock = std::chrono::steady_clock;

  HealthTracker(std::set<uint64_t> ignored, std::chrono::seconds recovery_quiet)
      : ignored_(std::move(ignored)), quiet_(recovery_quiet) {}

  // Returns true when the GPU's health changed (it became unhealthy).
  bool OnXid(const std::string& uuid, uint64_t xid, Clock::time_point now);
  // Called periodically for every GPU; a GPU that does not answer becomes unhealthy, an
  // unhealthy one that answers and has been quiet long enough recovers. True when health changed.
  bool OnProbe(const std::string& uuid, bool responds, Clock::time_point now);

  const std::set<std::string>& Unhealthy() const { return unhealthy_; }

 private:
  std::set<uint64_t> ignored_;
  std::chrono::seconds quiet_;
  std::set<std::string> unhealthy_;
  std::map<std::string, Clock::time_point> last_xid_;
};

}  // namespace vgpu::deviceplugin
