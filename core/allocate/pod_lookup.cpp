#include "core/allocate/pod_lookup.h"

#include <cstdlib>
#include <limits>
#include <set>
#include <utility>

#include "core/codec/annotations.h"

namespace vgpu::allocate {
namespace {

using annotations::kBindPhase;
using annotations::kBindPhaseAllocating;
using annotations::kBindPhaseSuccess;
using annotations::kBindTime;
using annotations::kVgpuNode;

std::string AnnotationOf(const PodView& pod, std::string_view key) {
  auto it = pod.annotations.find(std::string(key));
  return it == pod.annotations.end() ? std::string() : it->second;
}

bool IsAllocating(const PodView& pod) {
  return AnnotationOf(pod, kBindPhase) == kBindPhaseAllocating;
}

// Unparsable or missing bind-time sorts last, so a well-formed candidate wins.
long long BindTimeOf(const PodView& pod) {
  const std::string text = AnnotationOf(pod, kBindTime);
  char* end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end == nullptr || *end != '\0') {
    return std::numeric_limits<long long>::max();
  }
  return value;
}

}  // namespace

Result<size_t> FindAllocatingPod(const std::string& node, const std::optional<PodKey>& lock_owner,
                                 const std::vector<PodView>& pods) {
  if (lock_owner) {
    for (size_t i = 0; i < pods.size(); ++i) {
      const PodView& p = pods[i];
      if (p.ns != lock_owner->ns || p.name != lock_owner->name) {
        continue;
      }
      const std::string assigned = AnnotationOf(p, kVgpuNode);
      if (IsAllocating(p) && p.node_name == node && (assigned.empty() || assigned == node)) {
        return i;
      }
      break;  // the owner is not (or no longer) allocating here: fall back to annotations
    }
  }
  std::optional<size_t> best;
  for (size_t i = 0; i < pods.size(); ++i) {
    const PodView& p = pods[i];
    if (p.phase != "Pending" || !IsAllocating(p) || p.node_name != node ||
        AnnotationOf(p, kVgpuNode) != node) {
      continue;
    }
    if (!best || BindTimeOf(p) < BindTimeOf(pods[*best])) {
      best = i;
    }
  }
  if (best) {
    return *best;
  }
  std::string why = "no pod bound to node " + node + " is waiting for GPUs (none is Pending with " +
                    std::string(kBindPhase) + "=" + std::string(kBindPhaseAllocating) + " and " +
                    std::string(kVgpuNode) + "=" + node + ")";
  if (lock_owner) {
    why += "; the node lock names " + lock_owner->ns + "/" + lock_owner->name;
  }
  why +=
      ". Was the pod scheduled by the vgpu/HAMi scheduler? kubelet may also be retrying an "
      "Allocate whose pod was deleted";
  return NotFound(why);
}

Result<AllocationTarget> FindAllocationTarget(const std::string& node,
                                              const std::optional<PodKey>& lock_owner,
                                              const std::vector<PodView>& pods,
                                              const std::vector<OwedAnswer>& owed) {
  auto allocating = FindAllocatingPod(node, lock_owner, pods);
  std::optional<AllocationTarget> best;
  for (size_t i = 0; i < pods.size(); ++i) {
    const PodView& p = pods[i];
    const std::string phase = AnnotationOf(p, kBindPhase);
    if (p.phase != "Pending" || p.node_name != node || AnnotationOf(p, kVgpuNode) != node ||
        (phase != kBindPhaseAllocating && phase != kBindPhaseSuccess)) {
      continue;
    }
    for (const OwedAnswer& o : owed) {
      if (o.pod_uid == p.uid && (!best || BindTimeOf(p) < BindTimeOf(pods[best->pod]))) {
        best = AllocationTarget{i, o.container};
        break;
      }
    }
  }
  if (!best) {
    if (!allocating.ok()) {
      return allocating.status();
    }
    return AllocationTarget{*allocating, std::nullopt};
  }
  if (allocating.ok() && BindTimeOf(pods[*allocating]) < BindTimeOf(pods[best->pod])) {
    return AllocationTarget{*allocating, std::nullopt};
  }
  return *best;
}

bool KubeletListsUnserved(const std::vector<KubeletPod>& kubelet, const PodKey& key) {
  for (const KubeletPod& k : kubelet) {
    if (k.unserved && k.ns == key.ns && k.name == key.name) return true;
  }
  return false;
}

Result<AllocationTarget> FindAdmittedTarget(const std::string& node,
                                            const std::optional<PodKey>& lock_owner,
                                            const std::vector<PodView>& pods,
                                            const std::vector<OwedAnswer>& owed,
                                            const std::vector<KubeletPod>& kubelet) {
  std::vector<PodView> admitting;
  std::vector<size_t> index;
  std::set<std::pair<std::string, std::string>> known;
  for (size_t i = 0; i < pods.size(); ++i) {
    known.emplace(pods[i].ns, pods[i].name);
    if (KubeletListsUnserved(kubelet, PodKey{pods[i].ns, pods[i].name})) {
      admitting.push_back(pods[i]);
      index.push_back(i);
    }
  }
  if (!admitting.empty()) {
    auto hit = FindAllocationTarget(node, lock_owner, admitting, owed);
    if (hit.ok()) {
      hit->pod = index[hit->pod];
      return hit;
    }
  }
  std::string deleted;
  for (const KubeletPod& k : kubelet) {
    if (k.unserved && known.count({k.ns, k.name}) == 0) {
      deleted += (deleted.empty() ? "" : ", ") + k.ns + "/" + k.name;
    }
  }
  if (!deleted.empty()) {
    return FailedPrecondition(
        "kubelet is admitting a pod the API server no longer has (" + deleted +
        "), and none of the pods waiting for GPUs on node " + node +
        "; refused so that it takes no waiting pod's devices (a pod deleted while kubelet "
        "admitted it)");
  }
  return FindAllocationTarget(node, lock_owner, pods, owed);
}

}  // namespace vgpu::allocate
