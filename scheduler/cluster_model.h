#pragma once

// The extender's in-memory view of the cluster, fed by node, pod and ResourceQuota watches.
// Usage is rebuilt from hami.io/vgpu-devices-allocated of live pods plus in-flight reservations
// (bind chose GPUs, the watch has not shown the pod's annotations yet), one record per pod UID
// so nothing is counted twice. Thread-safe: readers share a lock, updates take it exclusively.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/sched/cluster_objects.h"
#include "core/sched/fit.h"
#include "core/sched/pod_request.h"
#include "core/sched/quota.h"

namespace vgpu::scheduler {

class ClusterModel {
 public:
  explicit ClusterModel(sched::ResourceNames names = {}) : names_(std::move(names)) {}

  // --- Watch feed ---------------------------------------------------------------------------
  void UpsertNode(const nlohmann::json& node);
  void RemoveNode(const std::string& name);
  void ReplaceNodes(const nlohmann::json& items);  // a (re)list: forgets nodes not in it
  void UpsertPod(const nlohmann::json& pod);
  void RemovePod(const nlohmann::json& pod);
  void ReplacePods(const nlohmann::json& items);
  void UpsertQuota(const nlohmann::json& quota);
  void RemoveQuota(const nlohmann::json& quota);
  void ReplaceQuotas(const nlohmann::json& items);

  // --- Reservations ---------------------------------------------------------------------------
  // Atomically re-checks `fit` against the current usage of `node` and reserves its result for
  // the pod. `fit` runs under the exclusive lock; the reservation is dropped by Unreserve, by
  // the pod's deletion or terminal phase, or replaced when the watch shows its annotations.
  struct ReserveResult {
    bool ok = false;
    sched::PodAllocation allocation;
    std::string message;
    // Each chosen GPU's usage with this reservation counted (the bind's log line shows it).
    std::map<std::string, sched::DeviceUsage> usage_after;
    // Only with `only_if_unplaced`: the pod already holds or reserves GPUs on some node (a bind
    // of it ran before); nothing was changed.
    bool already_placed = false;
  };
  // `only_if_unplaced`: refuse (already_placed) instead of replacing the pod's earlier placement
  // or reservation; a bind that has not read the pod from the API server asks this.
  ReserveResult Reserve(const std::string& uid, const std::string& ns, const std::string& name,
                        const std::string& node,
                        const std::function<sched::NodeFit(const sched::NodeState&)>& fit,
                        bool only_if_unplaced = false);
  void Unreserve(const std::string& uid);

  // Moves on whenever capacity may have been freed: a pod holding or reserving GPUs went away or
  // turned terminal, a reservation was dropped, nodes, pods or quotas were (re)read. Pods the
  // extender turned away are sent back to kube-scheduler when it moves (requeue.h).
  uint64_t capacity_generation() const {
    return capacity_generation_.load(std::memory_order_acquire);
  }

  // --- Reads ----------------------------------------------------------------------------------
  // Calls `fn` with the node's state (usage filled in) under the shared lock; false if unknown.
  bool ReadNode(const std::string& name,
                const std::function<void(const sched::NodeState&)>& fn) const;
  // Calls `fn` once, under one shared lock, with the state of each of `names` (nullptr when
  // unknown); the pointers are valid only during the call (filter's parallel loop).
  void WithNodes(const std::vector<std::string>& names,
                 const std::function<void(const std::vector<const sched::NodeState*>&)>& fn) const;
  // Calls `fn(i, state or nullptr)` for each of `names` under one shared lock.
  void ReadNodes(const std::vector<std::string>& names,
                 const std::function<void(size_t, const sched::NodeState*)>& fn) const;
  // A pod counted on a node, as the preempt verb sees it; pointers valid only during the call.
  struct PlacedPod {
    const sched::PodState* state = nullptr;
    const std::map<std::string, sched::DeviceUsage>* footprint = nullptr;  // GPU uuid -> use
    bool reserved = false;  // counted from a bind in flight, not (yet) from its annotations
  };
  // Calls `fn` once, under one shared lock, with the state of each of `names` (nullptr when
  // unknown) and the pods on it (spec.nodeName, or bound by us), with or without GPUs. One pass
  // over the pods.
  void WithNodePods(
      const std::vector<std::string>& names,
      const std::function<void(const std::vector<const sched::NodeState*>&,
                               const std::vector<std::vector<PlacedPod>>&)>& fn) const;
  // All nodes, under the shared lock (metrics).
  void ForEachNode(const std::function<void(const sched::NodeState&)>& fn) const;
  // Pods holding devices, under the shared lock (metrics).
  void ForEachPlacedPod(const std::function<void(const sched::PodState&)>& fn) const;
  std::optional<sched::PodState> FindPod(const std::string& ns, const std::string& name) const;
  // The namespace's vGPU quota and current charge; nullopt when it has no vGPU quota.
  std::optional<sched::NamespaceQuota> Quota(const std::string& ns) const;
  // One row per namespace and vGPU resource (memory, cores) that HAMi's quota manager would hold
  // an entry for: a quota sets a limit on it, or the namespace's pods have been charged (then
  // both resources, as HAMi counts both for every pod). `limit` is the tightest quota's, unset
  // when none limits it. Sorted by namespace, memory before cores (metrics).
  struct QuotaRow {
    std::string ns;
    std::string resource;  // the resource name, e.g. nvidia.com/gpumem
    int64_t used = 0;      // MiB for memory, percent for cores
    std::optional<int64_t> limit;
  };
  std::vector<QuotaRow> QuotaRows() const;

  size_t node_count() const;
  size_t pod_count() const;
  size_t reservation_count() const;
  // Usage of one GPU (tests and metrics).
  sched::DeviceUsage UsageOf(const std::string& node, const std::string& uuid) const;

 private:
  struct PodRecord {
    sched::PodState state;
    bool reserved = false;  // usage comes from a reservation, not (yet) from annotations
    std::map<std::string, sched::DeviceUsage> footprint;  // counted on state.node
    sched::QuotaAmount charge;
  };
  struct NodeRecord {
    sched::NodeState state;
  };

  void UpsertPodLocked(const nlohmann::json& pod);
  void RemovePodLocked(const std::string& uid);
  void Count(const PodRecord& rec, int sign);
  void RefreshUsage(const std::string& node);
  std::string QuotaNs(const nlohmann::json& quota, std::string* name) const;

  sched::ResourceNames names_;
  mutable std::shared_mutex mu_;
  std::atomic<uint64_t> capacity_generation_{0};
  void CapacityMayHaveFreed() { capacity_generation_.fetch_add(1, std::memory_order_acq_rel); }
  std::unordered_map<std::string, NodeRecord> nodes_;
  std::unordered_map<std::string, PodRecord> pods_;                     // by uid
  std::map<std::pair<std::string, std::string>, std::string> by_name_;  // (ns, name) -> uid
  // node -> uuid -> usage; kept for nodes not (yet) known too.
  std::unordered_map<std::string, std::map<std::string, sched::DeviceUsage>> usage_;
  std::map<std::string, sched::QuotaAmount> ns_charge_;
  std::map<std::string, std::map<std::string, sched::QuotaLimit>> quotas_;  // ns -> name -> limit
};

}  // namespace vgpu::scheduler
