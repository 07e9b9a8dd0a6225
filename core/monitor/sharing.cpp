#include "core/monitor/sharing.h"

#include <set>
#include <utility>

namespace vgpu::monitor {

std::vector<Sharing> DecideSharing(const std::vector<GpuClaim>& claims,
                                   const std::map<std::string, int>& outside_users) {
  // Distinct containers on each GPU.
  std::map<std::string, std::set<std::string>> on;
  for (const GpuClaim& c : claims) {
    if (c.on_gpu) on[c.uuid].insert(c.container);
  }
  std::vector<Sharing> out;
  out.reserve(claims.size());
  for (const GpuClaim& c : claims) {
    auto users_it = on.find(c.uuid);
    const std::set<std::string>* users = users_it == on.end() ? nullptr : &users_it->second;
    auto outside_it = outside_users.find(c.uuid);
    const int outside = outside_it == outside_users.end() ? 0 : outside_it->second;
    const bool me = users != nullptr && users->contains(c.container);
    const size_t others = (users == nullptr ? 0 : users->size()) - (me ? 1 : 0) +
                          static_cast<size_t>(outside > 0 ? outside : 0);
    out.push_back(others == 0 ? Sharing::kAlone : Sharing::kShared);
  }
  return out;
}

}  // namespace vgpu::monitor
