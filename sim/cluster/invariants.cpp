#include "sim/cluster/invariants.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/base/strings.h"

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
  if (!g.healthy || !SelectorsAllow(pod, g)) return false;
  if (u.slots_used + 1 > g.slots) return false;
  if (u.slots_used > 0 && WantsIdleGpu(pod)) return false;
  if (u.exclusive || u.cores_used >= g.cores) return false;
  if (pod.request.cores >= g.cores && u.slots_used > 0) return false;
  if (u.mem_used + MemoryNeeded(pod.request, g.mem_mib) > g.mem_mib) return false;
  if (u.cores_used + pod.request.cores > g.cores) return false;
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

  // 3. Nothing pending could have been placed.
  for (const PodState& p : snapshot.pods) {
    if (!p.node.empty()) continue;
    ++report.pending_pods_checked;
    for (const NodeInventory& n : snapshot.nodes) {
      if (PodFitsNode(p, by_node[n.name])) {
        report.violations.push_back("pod " + p.ns + "/" + p.name + " is pending but fits node " +
                                    n.name);
        break;
      }
    }
  }
  return report;
}

}  // namespace vgpu::sim
