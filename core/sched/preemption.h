#pragma once

// Which pods to evict on one node so that a higher-priority pod's vGPUs fit (the extender's
// preempt verb). Pure: the adapter hands in the node, its GPU pods and the namespace's
// PodDisruptionBudgets; kube-scheduler deletes the victims and nominates the node.
//
// The choice follows kube-scheduler's own (defaultpreemption selectVictimsOnNode): every
// lower-priority pod is set aside; if the pod still does not fit, the node cannot help. Then the
// pods are taken back one by one, most important first, PDB-protected pods before the others,
// and each one whose return still leaves room stays (a "reprieve"); the rest are the victims. So
// no pod of equal or higher priority is ever a victim, a victim set never holds a pod that could
// stay, and pods a PDB protects are evicted only when no other choice frees enough. Among pods
// of equal priority the smaller footprints are taken back first, so fewer, larger pods go.

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/sched/types.h"

namespace vgpu::sched {

// metav1.LabelSelector: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist).
struct LabelRequirement {
  enum class Op { kIn, kNotIn, kExists, kDoesNotExist };
  std::string key;
  Op op = Op::kIn;
  std::set<std::string> values;
};
struct LabelSelector {
  std::vector<LabelRequirement> requirements;  // matchLabels become kIn with one value
  bool empty() const { return requirements.empty(); }
  bool Matches(const std::map<std::string, std::string>& labels) const;
};
Result<LabelSelector> ParseLabelSelector(const nlohmann::json& selector);

// The parts of a PodDisruptionBudget (policy/v1 or v1beta1) preemption reads.
struct DisruptionBudget {
  std::string ns;
  std::string name;
  LabelSelector selector;  // empty (or absent) matches no pod, as in kube-scheduler
  int64_t disruptions_allowed = 0;
  std::set<std::string> disrupted_pods;  // status.disruptedPods: already counted by the API
};
Result<DisruptionBudget> ReadDisruptionBudget(const nlohmann::json& pdb);

// A pod holding GPUs on the node.
struct PreemptionPod {
  std::string uid;
  std::string ns;
  std::string name;
  int32_t priority = 0;
  std::string start_time;  // RFC 3339; earlier = more important among equal priorities
  std::map<std::string, std::string> labels;
  std::map<std::string, DeviceUsage> footprint;  // GPU uuid -> what it holds there
  // Its GPUs free without an eviction (deleting, or a victim kube-scheduler already chose).
  bool leaving = false;
  // Not a pod kube-scheduler can delete yet (a bind in flight): never a victim.
  bool evictable = true;
};

struct VictimChoice {
  bool ok = false;                   // the pod fits once `victims` are gone
  std::vector<std::string> victims;  // uids, the order they were decided (least important last)
  int64_t pdb_violations = 0;        // victims whose eviction a PDB does not allow
  PodAllocation allocation;          // where the pod goes once they are gone, when ok
  std::string message;               // why not, when !ok
};

// `node.usage` counts every pod in `pods` (and anything else on the node, which stays).
// `preemptor_priority`: spec.priority of the pod that needs room.
VictimChoice SelectVictims(const NodeView& node, const PodRequest& req, int32_t preemptor_priority,
                           const std::vector<PreemptionPod>& pods,
                           const std::vector<DisruptionBudget>& budgets);

}  // namespace vgpu::sched
