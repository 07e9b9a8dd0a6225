#pragma once

// Per-namespace vGPU quotas: ResourceQuota `hard` entries for the memory resource (MiB) and the
// cores resource (percent), each counted as per-vGPU amount x vGPU count, as HAMi v2.10's quota
// manager charges them. HAMi reads only `limits.<resource>`; `requests.<resource>` and the plain
// `<resource>` are read too, because kube's own quota admission honours `requests.` for extended
// resources (charging one GPU's share per container, not per GPU) and users write either form.

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
  // Where each limit comes from, for the denial ("ResourceQuota gpu-quota
  // limits.nvidia.com/gpumem"): a user must learn which object and key to change.
  std::string mem_source, cores_source;
  bool empty() const { return !mem_mib && !cores; }
  // Both `this` and `o` must hold: the smaller value of each resource, with its source.
  void Tighten(const QuotaLimit& o);
};

// A namespace's tightest vGPU quota and what its pods already charge.
struct NamespaceQuota {
  QuotaLimit limit;
  QuotaAmount used;
};

// Reads the hard limits from a ResourceQuota object ({"spec":{"hard":{...}}}): for each resource
// the keys `limits.<r>`, `requests.<r>` and `<r>`; where several are set, the smallest holds.
// Entries for other resources are ignored. Malformed values are an error naming the entry. The
// sources read "ResourceQuota <metadata.name> <key>".
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
