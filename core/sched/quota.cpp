#include "core/sched/quota.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/codec/quantity.h"
#include "core/sched/fit.h"

namespace vgpu::sched {

Result<QuotaLimit> ParseResourceQuota(const nlohmann::json& quota, const ResourceNames& names) {
  QuotaLimit limit;
  if (!quota.is_object()) return InvalidArgument("ResourceQuota is not a JSON object");
  auto spec = quota.find("spec");
  if (spec == quota.end() || !spec->is_object()) return limit;
  auto hard = spec->find("hard");
  if (hard == spec->end() || !hard->is_object()) return limit;
  for (auto [key, out, memory] : {std::tuple{"limits." + names.memory, &limit.mem_mib, true},
                                  std::tuple{"limits." + names.cores, &limit.cores, false}}) {
    auto it = hard->find(key);
    if (it == hard->end()) continue;
    const std::string text = it->is_string()           ? it->get<std::string>()
                             : it->is_number_integer() ? std::to_string(it->get<int64_t>())
                                                       : std::string("not a quantity");
    Result<int64_t> q = memory ? codec::ParseMemoryMiB(text) : codec::ParseQuantity(text);
    if (!q.ok()) return q.status().WithContext("ResourceQuota hard." + key);
    *out = *q;
  }
  return limit;
}

QuotaAmount ChargeOf(const PodAllocation& alloc) {
  QuotaAmount a;
  for (const auto& [uuid, u] : PodFootprint(alloc)) {
    a.mem_mib += u.mem_mib;
    a.cores += u.cores;
  }
  return a;
}

QuotaAmount RequestedCharge(const PodRequest& req) {
  const auto charge = [](const ContainerRequest& c) {
    QuotaAmount a;
    if (c.mem_percent < 0) a.mem_mib = c.mem_mib * c.count;
    a.cores = static_cast<int64_t>(c.cores) * c.count;
    return a;
  };
  QuotaAmount init_peak, app_sum;
  for (const ContainerRequest& c : req.init_containers) {
    const QuotaAmount a = charge(c);
    init_peak.mem_mib = std::max(init_peak.mem_mib, a.mem_mib);
    init_peak.cores = std::max(init_peak.cores, a.cores);
  }
  for (const ContainerRequest& c : req.app_containers) app_sum += charge(c);
  return {std::max(init_peak.mem_mib, app_sum.mem_mib), std::max(init_peak.cores, app_sum.cores)};
}

std::optional<std::string> QuotaViolation(const QuotaLimit& limit, const QuotaAmount& used,
                                          const QuotaAmount& demand, const std::string& ns) {
  if (limit.mem_mib && demand.mem_mib > 0 && used.mem_mib + demand.mem_mib > *limit.mem_mib) {
    return "ResourceQuotaExceeded: namespace " + ns + " GPU memory quota is " +
           std::to_string(*limit.mem_mib) + " MiB, " + std::to_string(used.mem_mib) +
           " MiB in use, pod asks " + std::to_string(demand.mem_mib) + " MiB";
  }
  if (limit.cores && demand.cores > 0 && used.cores + demand.cores > *limit.cores) {
    return "ResourceQuotaExceeded: namespace " + ns + " GPU cores quota is " +
           std::to_string(*limit.cores) + "%, " + std::to_string(used.cores) +
           "% in use, pod asks " + std::to_string(demand.cores) + "%";
  }
  return std::nullopt;
}

}  // namespace vgpu::sched
