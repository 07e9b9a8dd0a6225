#pragma once

// Which pod is kubelet's Allocate call for? kubelet only sends replica IDs, so the plugin
// infers the pod from the scheduler's node lock, falling back to the annotations the
// scheduler's bind wrote (hami-compat §4).

#include <optional>
#include <string>
#include <vector>

#include "core/allocate/misdelivered.h"
#include "core/allocate/pod_view.h"
#include "core/base/status.h"

namespace vgpu::allocate {

struct PodKey {
  std::string ns;
  std::string name;
};

// Index into `pods` of the pod being allocated on `node`. kubelet allocates only for pods bound
// to it, so a pod qualifies only with spec.nodeName == node: the lock may already name the next
// pod, whose bind has written its annotations but not yet bound it, while kubelet still admits a
// pod bound before (one deleted meanwhile, e2e churn); handing that Allocate the next pod's
// devices left the next pod without an Allocate of its own (kubelet refused it).
//  1. the lock owner, when it is among `pods`, bound to `node` and still
//  `bind-phase=allocating`;
//  2. otherwise the Pending pod bound to `node` with `bind-phase=allocating` and
//     `hami.io/vgpu-node == node`;
//     when several qualify, the one with the earliest `hami.io/bind-time` (kubelet admits in
//     order).
// NotFound with an operator-readable reason when none qualifies.
Result<size_t> FindAllocatingPod(const std::string& node, const std::optional<PodKey>& lock_owner,
                                 const std::vector<PodView>& pods);

// The pod (and, for an owed answer, the container) an Allocate call is for, given the answers
// owed after kubelet gave them to another pod (core/allocate/misdelivered.h).
struct AllocationTarget {
  size_t pod = 0;
  // Set when the call is to repeat the answer owed for this container: its devices come from
  // `hami.io/vgpu-devices-allocated`, the to-allocate list is already consumed.
  std::optional<std::string> owed_container;
  friend bool operator==(const AllocationTarget&, const AllocationTarget&) = default;
};

// FindAllocatingPod, unless a pod is owed an answer: a pod bound to `node` (spec.nodeName and
// `hami.io/vgpu-node`), still Pending, `bind-phase` allocating or success, whose UID is owed.
// kubelet admits pods in the order they were bound, and the owed pod's own call comes next after
// the one that took its answer, so the owed pod with the earliest `hami.io/bind-time` wins against
// every allocating pod bound later (the lock owner included); an allocating pod bound earlier still
// comes first.
Result<AllocationTarget> FindAllocationTarget(const std::string& node,
                                              const std::optional<PodKey>& lock_owner,
                                              const std::vector<PodView>& pods,
                                              const std::vector<OwedAnswer>& owed);

// A pod kubelet knows, as its pod-resources API lists it: `unserved` when some container of it
// holds no device of the plugin's resource.
struct KubeletPod {
  std::string ns;
  std::string name;
  bool unserved = false;
};

// Whether kubelet lists `key` as unserved.
bool KubeletListsUnserved(const std::vector<KubeletPod>& kubelet, const PodKey& key);

// FindAllocationTarget with kubelet's own list of its pods. kubelet adds a pod to that list just
// before admitting it and records its devices when Allocate answers, so the pod an Allocate call
// is for is one kubelet lists as unserved. The decision is made among the node's pods that kubelet
// lists so (the rules above break a tie, e.g. with a pod kubelet refused); when none of them is
// waiting and kubelet lists an unserved pod the API server no longer has, the call is for that
// deleted pod: FailedPrecondition naming it, so that no waiting pod's answer goes to it (the node
// lock belongs to another pod then and must stay). Otherwise (a kubelet that lists pods only
// once admitted) the rules above over all of `pods`.
Result<AllocationTarget> FindAdmittedTarget(const std::string& node,
                                            const std::optional<PodKey>& lock_owner,
                                            const std::vector<PodView>& pods,
                                            const std::vector<OwedAnswer>& owed,
                                            const std::vector<KubeletPod>& kubelet);

}  // namespace vgpu::allocate
