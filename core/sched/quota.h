#pragma once

// Per-namespace vGPU quotas: ResourceQuota `hard` entries limits.<mem resource> (MiB) and
// limits.<cores resource> (percent), each counted as per-vGPU amount x vGPU count.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "core/base/status.h"
#include "core/sched/pod_request.h"
#include "core/sched/types.h"

namespace vgpu::sched {

struct QuotaAmount {
  int64_t mem_mib = 0;
  int64_t cores = 0;
  QuotaAmount& operator+=(const QuotaAmount& o) {
    mem_mib += o.mem_mib;
    cores += o.cores;
    return *this;
  }
  QuotaAmount& operator-=(const QuotaAmount& o) {
    mem_mib -= o.mem_mib;
    cores -= o.cores;
    return *this;
  }
  friend bool operator==(const QuotaAmount&, const QuotaAmount&) = default;
};

struct QuotaLimit {
  std::optional<int64_t> mem_mib;  // unset = unlimited
  std::optional<int64_t> cores;
  bool empty() const { return !mem_mib && !cores; }
};

// A namespace's tightest vGPU quota and what its pods already charge.
struct NamespaceQuota {
  QuotaLimit limit;
  QuotaAmount used;
};

// Reads the hard limits from a ResourceQuota object ({"spec":{"hard":{...}}}); entries for
// other resources are ignored. Malformed values are an error naming the entry.
Result<QuotaLimit> ParseResourceQuota(const nlohmann::json& quota, const ResourceNames& names);

// What a placed pod charges: the sum of its footprint over GPUs.
QuotaAmount ChargeOf(const PodAllocation& alloc);

// What a pod will charge at least, known before placement (memory given as a percentage is not
// known until a GPU is chosen and is left out). Init containers: max(init peak, app sum).
QuotaAmount RequestedCharge(const PodRequest& req);

// The reason `used + demand` breaks `limit`, or nullopt when it fits.
std::optional<std::string> QuotaViolation(const QuotaLimit& limit, const QuotaAmount& used,
                                          const QuotaAmount& demand, const std::string& ns);

}  // namespace vgpu::sched
