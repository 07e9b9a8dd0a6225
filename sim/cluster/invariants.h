#pragma once

// The simulated cluster's invariant checker. Independent of the scheduler's own fit logic on
// purpose: it is the oracle the scheduler is tested against.
//   1. No GPU is over-committed in memory, cores or vGPU slots, and an exclusive vGPU (cores = the
//      card's cores) shares its GPU with nobody.
//   2. Every placed pod got exactly its vGPU count, on distinct GPUs of the node it runs on.
//   3. Every pod left pending could not be placed on any node of the end state (nor within its
//      namespace's quota).
//   4. No namespace's placed pods hold more vGPU memory or cores than its ResourceQuotas allow.
//      The runner checks this after every bind too, so a quota passed and freed again is caught.
//   5. At each bind (the runner's check; the end state cannot show it): no pod placed on a GPU
//      its node's hami.io/device-cordon names, and a pod whose GPU policy names mutex placed only
//      on GPUs no other pod held.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cluster/request.h"

namespace vgpu::sim {

struct GpuInventory {
  std::string uuid;
  std::string model;
  int slots = 10;  // vGPU slots (device-split-count)
  int64_t mem_mib = 0;
  int cores = 100;
  int numa = 0;
  bool healthy = true;
  bool cordoned = false;  // named by the node's hami.io/device-cordon
};

struct NodeInventory {
  std::string name;
  std::vector<GpuInventory> gpus;
};

// One vGPU of a placed pod, as recorded in `hami.io/vgpu-devices-allocated`.
struct AllocatedVgpu {
  std::string uuid;
  int64_t mem_mib = 0;
  int cores = 0;
};

struct PodState {
  std::string ns;
  std::string name;
  std::string node;  // empty while pending
  VgpuRequest request;
  std::map<std::string, std::string> annotations;  // placement selectors (use-gputype, ...)
  std::vector<AllocatedVgpu> allocated;            // all containers' vGPUs
};

// A namespace's vGPU quota: the tightest of its ResourceQuotas' hard limits, charged as the sum
// of its pods' vGPUs (per-GPU amount x GPUs, as HAMi charges). Unset = unlimited.
struct QuotaState {
  std::string ns;
  std::optional<int64_t> mem_mib;
  std::optional<int64_t> cores;
};

struct ClusterSnapshot {
  std::vector<NodeInventory> nodes;
  std::vector<PodState> pods;  // live pods only: running or pending
  std::vector<QuotaState> quotas;
};

struct GpuUsage {
  std::string node;
  GpuInventory gpu;
  int64_t mem_used = 0;
  int cores_used = 0;
  int slots_used = 0;
  bool exclusive = false;  // holds a vGPU that takes all the card's cores
};

// Per-GPU usage of the snapshot, in node order then GPU order. Allocations naming GPUs that no
// node has are left out here and reported by CheckInvariants.
std::vector<GpuUsage> ComputeGpuUsage(const ClusterSnapshot& snapshot);

struct InvariantReport {
  std::vector<std::string> violations;  // one readable sentence each
  int gpus_checked = 0;
  int placed_pods_checked = 0;
  int pending_pods_checked = 0;
  int quotas_checked = 0;      // namespaces with a quota (invariant 4)
  int placements_checked = 0;  // binds checked as they happened (the runner's, invariant 4)
  int cordon_checks = 0;       // binds checked against their node's cordon (invariant 5)
  int mutex_checks = 0;        // binds of pods asking for mutex (invariant 5)

  bool ok() const { return violations.empty(); }
};

InvariantReport CheckInvariants(const ClusterSnapshot& snapshot);

// Invariant 4 alone: one sentence per namespace and resource over its quota, naming the amounts
// and the pods holding them.
std::vector<std::string> CheckQuotas(const std::vector<PodState>& pods,
                                     const std::vector<QuotaState>& quotas);

// Invariant 5 for one bind: `cordoned` are the UUIDs the node's hami.io/device-cordon named at
// that moment, `placed` the pods placed before it and still there. One sentence per problem.
std::vector<std::string> CheckPlacement(const PodState& pod, const std::set<std::string>& cordoned,
                                        const std::vector<PodState>& placed);

// Whether the pod's hami.io/gpu-scheduler-policy names mutex (alone or in a combination).
bool AsksForIdleGpu(const PodState& pod);

// The UUIDs a hami.io/device-cordon value names: comma-separated, blanks trimmed.
std::set<std::string> CordonedUuids(std::string_view annotation);

// The scenario's ResourceQuotas as limits per namespace, read here from the `hard` keys
// ([limits.|requests.]nvidia.com/gpumem, .../gpucores; the smallest holds) independently of the
// extender's reading. A value that is no quantity is an error naming the quota and key.
Result<std::vector<QuotaState>> QuotaStatesOf(const std::vector<QuotaSpec>& quotas);

// True when `pod` could be placed on `node` given `usage` (entries of that node's GPUs).
// Exposed for tests and for the "why pending" column of the report.
bool PodFitsNode(const PodState& pod, const std::vector<const GpuUsage*>& node_gpus);

}  // namespace vgpu::sim
