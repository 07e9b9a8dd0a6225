#include "sim/cluster/invariants.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/base/strings.h"
#include "core/codec/quantity.h"

namespace vgpu::sim {

namespace {

std::vector<std::string> SplitCommaList(std::string_view list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view item = list.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    start = end + 1;
  }
  return out;
}

const std::string* Annotation(const PodState& pod, const char* key) {
  auto it = pod.annotations.find(key);
  return it == pod.annotations.end() ? nullptr : &it->second;
}

// hami-compat §1: type lists match a case-insensitive substring of the model; UUID lists exactly.
bool SelectorsAllow(const PodState& pod, const GpuInventory& gpu) {
  const std::string model = Lower(gpu.model);
  if (const std::string* use = Annotation(pod, "nvidia.com/use-gputype")) {
    bool any = false;
    for (const std::string& t : SplitCommaList(*use)) {
      any = any || model.find(Lower(t)) != std::string::npos;
    }
    if (!any) return false;
  }
  if (const std::string* nouse = Annotation(pod, "nvidia.com/nouse-gputype")) {
    for (const std::string& t : SplitCommaList(*nouse)) {
      if (model.find(Lower(t)) != std::string::npos) return false;
    }
  }
  if (const std::string* use = Annotation(pod, "nvidia.com/use-gpuuuid")) {
    const std::vector<std::string> ids = SplitCommaList(*use);
    if (std::find(ids.begin(), ids.end(), gpu.uuid) == ids.end()) return false;
  }
  if (const std::string* nouse = Annotation(pod, "nvidia.com/nouse-gpuuuid")) {
    const std::vector<std::string> ids = SplitCommaList(*nouse);
    if (std::find(ids.begin(), ids.end(), gpu.uuid) != ids.end()) return false;
  }
  return true;
}

// HAMi's "mutex" GPU policy word, alone or in a comma-separated combination ("binpack,mutex").
bool WantsIdleGpu(const PodState& pod) {
  const std::string* policy = Annotation(pod, "hami.io/gpu-scheduler-policy");
  if (policy == nullptr) return false;
  for (const std::string& word : SplitCommaList(*policy)) {
    if (Lower(word) == "mutex") return true;
  }
  return false;
}

bool GpuCanHost(const PodState& pod, const GpuUsage& u) {
  const GpuInventory& g = u.gpu;
  if (!g.healthy || g.cordoned || !SelectorsAllow(pod, g)) return false;
  if (u.slots_used + 1 > g.slots) return false;
  if (u.slots_used > 0 && WantsIdleGpu(pod)) return false;
  if (u.exclusive || u.cores_used >= g.cores) return false;
  if (pod.request.cores >= g.cores && u.slots_used > 0) return false;
  if (u.mem_used + MemoryNeeded(pod.request, g.mem_mib) > g.mem_mib) return false;
  if (u.cores_used + pod.request.cores > g.cores) return false;
  return true;
}

struct Charge {
  int64_t mem_mib = 0;
  int64_t cores = 0;
  std::vector<std::string> pods;
};

// What each namespace's placed pods hold: the sum of their vGPUs as recorded, which is what a
// quota charges (per-GPU amount x GPUs; a percentage ask as the chosen GPU's MiB).
std::map<std::string, Charge> ChargesOf(const std::vector<PodState>& pods) {
  std::map<std::string, Charge> out;
  for (const PodState& p : pods) {
    if (p.node.empty()) continue;
    Charge& c = out[p.ns];
    for (const AllocatedVgpu& v : p.allocated) {
      c.mem_mib += v.mem_mib;
      c.cores += v.cores;
    }
    c.pods.push_back(p.name);
  }
  return out;
}

const QuotaState* QuotaOf(const std::vector<QuotaState>& quotas, const std::string& ns) {
  for (const QuotaState& q : quotas) {
    if (q.ns == ns) return &q;
  }
  return nullptr;
}

// Whether placing `pod` on `node_gpus` keeps its namespace within its quota. The memory charged
// is the least any of the node's GPUs would give it (a percentage differs per card), so "fits"
// errs towards reporting a pending pod, never towards hiding one.
bool QuotaAllows(const PodState& pod, const std::vector<const GpuUsage*>& node_gpus,
                 const QuotaState* quota, const Charge& used) {
  if (quota == nullptr || pod.request.count <= 0) return true;
  int64_t per_gpu_mem = -1;
  for (const GpuUsage* u : node_gpus) {
    const int64_t m = MemoryNeeded(pod.request, u->gpu.mem_mib);
    if (per_gpu_mem < 0 || m < per_gpu_mem) per_gpu_mem = m;
  }
  if (per_gpu_mem < 0) per_gpu_mem = 0;
  const int64_t n = pod.request.count;
  if (quota->mem_mib && used.mem_mib + n * per_gpu_mem > *quota->mem_mib) return false;
  if (quota->cores && used.cores + n * pod.request.cores > *quota->cores) return false;
  return true;
}

}  // namespace

std::vector<GpuUsage> ComputeGpuUsage(const ClusterSnapshot& snapshot) {
  std::vector<GpuUsage> usage;
  std::unordered_map<std::string, size_t> by_uuid;
  for (const NodeInventory& n : snapshot.nodes) {
    for (const GpuInventory& g : n.gpus) {
      by_uuid.emplace(g.uuid, usage.size());
      usage.push_back(GpuUsage{n.name, g});
    }
  }
  for (const PodState& p : snapshot.pods) {
    for (const AllocatedVgpu& v : p.allocated) {
      auto it = by_uuid.find(v.uuid);
      if (it == by_uuid.end()) continue;
      GpuUsage& u = usage[it->second];
      u.mem_used += v.mem_mib;
      u.cores_used += v.cores;
      u.slots_used += 1;
      if (v.cores >= u.gpu.cores) u.exclusive = true;
    }
  }
  return usage;
}

bool PodFitsNode(const PodState& pod, const std::vector<const GpuUsage*>& node_gpus) {
  if (pod.request.count <= 0) return true;
  const std::string* numa_bind = Annotation(pod, "nvidia.com/numa-bind");
  const bool bind = numa_bind != nullptr && Lower(*numa_bind) == "true";
  std::map<int, int> per_numa;
  int total = 0;
  for (const GpuUsage* u : node_gpus) {
    if (GpuCanHost(pod, *u)) {
      ++total;
      ++per_numa[u->gpu.numa];
    }
  }
  if (!bind) return total >= pod.request.count;
  for (const auto& [numa, n] : per_numa) {
    if (n >= pod.request.count) return true;
  }
  return false;
}

InvariantReport CheckInvariants(const ClusterSnapshot& snapshot) {
  InvariantReport report;
  const std::vector<GpuUsage> usage = ComputeGpuUsage(snapshot);
  std::unordered_map<std::string, const GpuUsage*> by_uuid;
  std::unordered_map<std::string, std::vector<const GpuUsage*>> by_node;
  for (const GpuUsage& u : usage) {
    by_uuid.emplace(u.gpu.uuid, &u);
    by_node[u.node].push_back(&u);
  }

  // 1. Capacity of every GPU.
  for (const GpuUsage& u : usage) {
    ++report.gpus_checked;
    const std::string where = "GPU " + u.gpu.uuid + " on " + u.node;
    if (u.mem_used > u.gpu.mem_mib) {
      report.violations.push_back(where + ": memory over-committed, " + std::to_string(u.mem_used) +
                                  " MiB allocated of " + std::to_string(u.gpu.mem_mib));
    }
    if (u.cores_used > u.gpu.cores) {
      report.violations.push_back(where + ": cores over-committed, " +
                                  std::to_string(u.cores_used) + "% allocated of " +
                                  std::to_string(u.gpu.cores));
    }
    if (u.slots_used > u.gpu.slots) {
      report.violations.push_back(where + ": slots over-committed, " +
                                  std::to_string(u.slots_used) + " vGPUs on " +
                                  std::to_string(u.gpu.slots) + " slots");
    }
    if (u.exclusive && u.slots_used > 1) {
      report.violations.push_back(where + ": an exclusive vGPU (all cores) shares the card with " +
                                  std::to_string(u.slots_used - 1) + " other vGPU(s)");
    }
  }

  // 2. Every placed pod's record matches its request and its node.
  for (const PodState& p : snapshot.pods) {
    if (p.node.empty()) continue;
    ++report.placed_pods_checked;
    const std::string who = "pod " + p.ns + "/" + p.name + " on " + p.node;
    if (static_cast<int>(p.allocated.size()) != p.request.count) {
      report.violations.push_back(who + ": asked for " + std::to_string(p.request.count) +
                                  " vGPU(s) but holds " + std::to_string(p.allocated.size()));
    }
    std::set<std::string> seen;
    for (const AllocatedVgpu& v : p.allocated) {
      if (!seen.insert(v.uuid).second) {
        report.violations.push_back(who + ": two vGPUs on the same GPU " + v.uuid);
      }
      auto it = by_uuid.find(v.uuid);
      if (it == by_uuid.end()) {
        report.violations.push_back(who + ": holds GPU " + v.uuid + " that no node has");
      } else if (it->second->node != p.node) {
        report.violations.push_back(who + ": holds GPU " + v.uuid + " of node " + it->second->node);
      }
    }
  }

  // 3. Nothing pending could have been placed (within its namespace's quota).
  const std::map<std::string, Charge> charges = ChargesOf(snapshot.pods);
  for (const PodState& p : snapshot.pods) {
    if (!p.node.empty()) continue;
    ++report.pending_pods_checked;
    const QuotaState* quota = QuotaOf(snapshot.quotas, p.ns);
    auto charged = charges.find(p.ns);
    const Charge used = charged == charges.end() ? Charge{} : charged->second;
    for (const NodeInventory& n : snapshot.nodes) {
      if (PodFitsNode(p, by_node[n.name]) && QuotaAllows(p, by_node[n.name], quota, used)) {
        report.violations.push_back("pod " + p.ns + "/" + p.name + " is pending but fits node " +
                                    n.name);
        break;
      }
    }
  }

  // 4. No namespace over its quota.
  report.quotas_checked = static_cast<int>(snapshot.quotas.size());
  for (std::string& v : CheckQuotas(snapshot.pods, snapshot.quotas)) {
    report.violations.push_back(std::move(v));
  }
  return report;
}

std::vector<std::string> CheckPlacement(const PodState& pod, const std::set<std::string>& cordoned,
                                        const std::vector<PodState>& placed) {
  std::vector<std::string> out;
  const std::string who = "pod " + pod.ns + "/" + pod.name + " on " + pod.node;
  const bool mutex = AsksForIdleGpu(pod);
  for (const AllocatedVgpu& v : pod.allocated) {
    if (cordoned.contains(v.uuid)) {
      out.push_back(who + ": placed on " + v.uuid +
                    ", which the node's hami.io/device-cordon named");
    }
    if (!mutex) continue;
    for (const PodState& other : placed) {
      if (other.ns == pod.ns && other.name == pod.name) continue;
      const bool shares = std::any_of(other.allocated.begin(), other.allocated.end(),
                                      [&](const AllocatedVgpu& o) { return o.uuid == v.uuid; });
      if (shares) {
        out.push_back(who + ": its GPU policy names mutex but " + v.uuid + " was held by " +
                      other.ns + "/" + other.name);
      }
    }
  }
  return out;
}

bool AsksForIdleGpu(const PodState& pod) {
  return WantsIdleGpu(pod);
}

std::set<std::string> CordonedUuids(std::string_view annotation) {
  std::vector<std::string> list = SplitCommaList(annotation);
  return {list.begin(), list.end()};
}

std::vector<std::string> CheckQuotas(const std::vector<PodState>& pods,
                                     const std::vector<QuotaState>& quotas) {
  std::vector<std::string> out;
  const std::map<std::string, Charge> charges = ChargesOf(pods);
  for (const QuotaState& q : quotas) {
    auto it = charges.find(q.ns);
    if (it == charges.end()) continue;
    const Charge& c = it->second;
    std::string held = " held by";
    for (size_t i = 0; i < c.pods.size(); ++i)
      held += (i == 0 ? " " : ", ") + q.ns + "/" + c.pods[i];
    if (q.mem_mib && c.mem_mib > *q.mem_mib) {
      out.push_back("namespace " + q.ns + ": GPU memory quota exceeded, " +
                    std::to_string(c.mem_mib) + " MiB placed of " + std::to_string(*q.mem_mib) +
                    held);
    }
    if (q.cores && c.cores > *q.cores) {
      out.push_back("namespace " + q.ns + ": GPU cores quota exceeded, " + std::to_string(c.cores) +
                    "% placed of " + std::to_string(*q.cores) + held);
    }
  }
  return out;
}

Result<std::vector<QuotaState>> QuotaStatesOf(const std::vector<QuotaSpec>& quotas) {
  std::vector<QuotaState> out;
  for (const QuotaSpec& spec : quotas) {
    QuotaState* state = nullptr;
    for (QuotaState& s : out) {
      if (s.ns == spec.ns) state = &s;
    }
    if (state == nullptr) {
      out.push_back(QuotaState{spec.ns, std::nullopt, std::nullopt});
      state = &out.back();
    }
    for (const auto& [key, value] : spec.hard) {
      const bool memory = key.ends_with("/gpumem");
      if (!memory && !key.ends_with("/gpucores")) continue;
      Result<int64_t> n = memory ? codec::ParseMemoryMiB(value) : codec::ParseQuantity(value);
      if (!n.ok()) return n.status().WithContext("quota " + spec.ns + "/" + spec.name + " " + key);
      // Every ResourceQuota of the namespace and every key form must hold: the smallest wins.
      std::optional<int64_t>& limit = memory ? state->mem_mib : state->cores;
      if (!limit || *n < *limit) limit = *n;
    }
  }
  return out;
}

}  // namespace vgpu::sim
