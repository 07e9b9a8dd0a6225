#include "core/sched/quota.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/codec/quantity.h"
#include "core/sched/fit.h"

namespace vgpu::sched {

void QuotaLimit::Tighten(const QuotaLimit& o) {
  if (o.mem_mib && (!mem_mib || *o.mem_mib < *mem_mib)) {
    mem_mib = o.mem_mib;
    mem_source = o.mem_source;
  }
  if (o.cores && (!cores || *o.cores < *cores)) {
    cores = o.cores;
    cores_source = o.cores_source;
  }
}

Result<QuotaLimit> ParseResourceQuota(const nlohmann::json& quota, const ResourceNames& names) {
  QuotaLimit limit;
  if (!quota.is_object()) return InvalidArgument("ResourceQuota is not a JSON object");
  std::string name = "?";
  if (auto m = quota.find("metadata"); m != quota.end() && m->is_object()) {
    if (auto n = m->find("name"); n != m->end() && n->is_string()) name = n->get<std::string>();
  }
  auto spec = quota.find("spec");
  if (spec == quota.end() || !spec->is_object()) return limit;
  auto hard = spec->find("hard");
  if (hard == spec->end() || !hard->is_object()) return limit;
  for (const char* prefix : {"limits.", "requests.", ""}) {
    for (const bool memory : {true, false}) {
      const std::string key = prefix + (memory ? names.memory : names.cores);
      auto it = hard->find(key);
      if (it == hard->end()) continue;
      const std::string text = it->is_string()           ? it->get<std::string>()
                               : it->is_number_integer() ? std::to_string(it->get<int64_t>())
                                                         : std::string("not a quantity");
      Result<int64_t> q = memory ? codec::ParseMemoryMiB(text) : codec::ParseQuantity(text);
      if (!q.ok()) return q.status().WithContext("ResourceQuota " + name + " hard." + key);
      QuotaLimit one;
      (memory ? one.mem_mib : one.cores) = *q;
      (memory ? one.mem_source : one.cores_source) = "ResourceQuota " + name + " " + key;
      limit.Tighten(one);
    }
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
  // Names the object and key to raise, the resource, and the three amounts: what a user needs to
  // decide between asking less, freeing pods of the namespace and raising the quota.
  const auto message = [&](const std::string& source, const char* what, int64_t hard,
                           int64_t in_use, int64_t asks, const char* unit) {
    return "ResourceQuotaExceeded: namespace " + ns + ": " + what + " quota is " +
           std::to_string(hard) + unit + " (" + (source.empty() ? "ResourceQuota" : source) +
           "), " + std::to_string(in_use) + unit + " in use, this pod asks " +
           std::to_string(asks) + unit + " (per-GPU amount x GPUs)";
  };
  if (limit.mem_mib && demand.mem_mib > 0 && used.mem_mib + demand.mem_mib > *limit.mem_mib) {
    return message(limit.mem_source, "GPU memory", *limit.mem_mib, used.mem_mib, demand.mem_mib,
                   " MiB");
  }
  if (limit.cores && demand.cores > 0 && used.cores + demand.cores > *limit.cores) {
    return message(limit.cores_source, "GPU cores", *limit.cores, used.cores, demand.cores, "%");
  }
  return std::nullopt;
}

}  // namespace vgpu::sched
