#pragma once

// Which pod is kubelet's Allocate call for? kubelet only sends replica IDs, so the plugin
// infers the pod from the scheduler's node lock, falling back to the annotations the
// scheduler's bind wrote (hami-compat §4).

#include <optional>
#include <string>
#include <vector>

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

}  // namespace vgpu::allocate
