#include "deviceplugin/health.h"

#include <charconv>

namespace vgpu::deviceplugin {

std::set<uint64_t> DefaultIgnoredXids() {
  return {13, 31, 43, 45, 68, 109};
}

Result<std::set<uint64_t>> ParseXidList(const std::string& text) {
  std::set<uint64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) {
      comma = text.size();
    }
    std::string item = text.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') {
      item.erase(item.begin());
    }
    while (!item.empty() && item.back() == ' ') {
      item.pop_back();
    }
    if (!item.empty()) {
      uint64_t v = 0;
      auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
      if (ec != std::errc() || end != item.data() + item.size()) {
        return InvalidArgument("XID list: '" + item + "' is not a number (expected e.g. 13,31,43)");
      }
      out.insert(v);
    }
    start = comma + 1;
  }
  return out;
}

bool HealthTracker::OnXid(const std::string& uuid, uint64_t xid, Clock::time_point now) {
  if (ignored_.contains(xid)) {
    return false;
  }
  last_xid_[uuid] = now;
  return unhealthy_.insert(uuid).second;
}

bool HealthTracker::OnProbe(const std::string& uuid, bool responds, Clock::time_point now) {
  if (!responds) {
    last_xid_[uuid] = now;  // the quiet period restarts from the last sign of trouble
    return unhealthy_.insert(uuid).second;
  }
  if (!unhealthy_.contains(uuid)) {
    return false;
  }
  auto it = last_xid_.find(uuid);
  if (it != last_xid_.end() && now - it->second < quiet_) {
    return false;
  }
  unhealthy_.erase(uuid);
  return true;
}

}  // namespace vgpu::deviceplugin
