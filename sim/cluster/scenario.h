#pragma once

// A `vgpu sim` scenario: the simulated nodes with their GPUs, the pods that arrive over (virtual)
// time with their vGPU requests, and the scheduling policies to compare. Pure data + parsing.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/codec/gpu_topology.h"

namespace vgpu::sim {

struct GpuSpec {
  std::string uuid;
  std::string model;  // e.g. "NVIDIA A100-SXM4-40GB"
  int64_t memory_mib = 0;
  int numa = 0;
};

struct NodeSpec {
  std::string name;
  std::vector<GpuSpec> gpus;
  // How the GPUs are connected: a preset (kTopologyPresets) or codec::ParseTopologySpec's text
  // over the GPUs in list order. The node's device plugin publishes the pair scores
  // (hami.io/node-nvidia-score) the topology-aware GPU policy reads; empty = none published.
  std::string topology;
};

// Preset topologies by name, each a codec::ParseTopologySpec text.
struct TopologyPreset {
  std::string_view name;
  std::string_view spec;
};
inline constexpr TopologyPreset kTopologyPresets[] = {
    // GPUs 2k and 2k+1 joined by 4 NVLinks under one NUMA node (PCIe path `node`), every other
    // pair across the system: the fake driver's default topology.
    {"nvlink-pairs", "default"},
    // No NVLink: every pair under one PCIe host bridge; all pair scores equal.
    {"pcie", "*=hostbridge"},
};

// The node's topology, presets resolved; nullopt when it declares none. InvalidArgument naming
// the node for a bad spec.
Result<std::optional<codec::GpuTopology>> NodeTopology(const NodeSpec& node);

// One pod with one container asking for vGPUs (HAMi resource names, see hami-compat §1).
struct PodSpec {
  std::string name;
  std::string ns = "default";
  double arrival_s = 0;              // virtual seconds from the start of the run
  std::optional<double> duration_s;  // deleted this long after it runs; absent = forever
  std::optional<int> gpus;           // nvidia.com/gpu
  std::optional<int64_t> mem_mib;    // nvidia.com/gpumem
  std::optional<int> mem_percent;    // nvidia.com/gpumem-percentage
  std::optional<int> cores;          // nvidia.com/gpucores
  // spec.priority (as a PriorityClass sets it); absent = 0. A pod no node takes preempts pods of
  // lower priority through the extender's preempt verb.
  std::optional<int> priority;
  std::map<std::string, std::string> annotations;
};

// A ResourceQuota created in the API server before the pods arrive: the extender watches it and
// charges the namespace's pods per GPU (docs/scheduler.md "Quotas"); a pod over it is denied by
// the webhook (a rejection in the report) or, for a percentage ask, left pending by the filter.
struct QuotaSpec {
  std::string ns = "default";
  std::string name;
  // spec.hard: keys [limits.|requests.]nvidia.com/gpumem (MiB) and .../gpucores (percent).
  std::map<std::string, std::string> hard;
};

// hami.io/device-cordon on a node over virtual time (docs/scheduler.md "Per-GPU gates"): the
// listed GPUs take no new pods from `at` until `until` (absent: the rest of the run); pods
// already on them keep running. A node's annotation is the union of its entries in force.
struct CordonSpec {
  std::string node;
  std::vector<std::string> gpus;  // UUIDs of the node's GPUs
  double at_s = 0;
  std::optional<double> until_s;
};

// A node policy / GPU policy pair (hami-compat §1: node binpack | spread; GPU a comma-separated
// list such as "binpack,mutex", see sched::ParseGpuPolicy). Each pair is one run.
struct PolicyPair {
  std::string node_policy = "binpack";
  std::string gpu_policy = "spread";

  std::string Label() const { return "node=" + node_policy + ",gpu=" + gpu_policy; }
  friend bool operator==(const PolicyPair&, const PolicyPair&) = default;
};

struct Scenario {
  std::string name = "scenario";
  std::string description;
  int split_count = 10;  // deviceSplitCount: vGPU slots per GPU
  std::vector<NodeSpec> nodes;
  std::vector<PodSpec> pods;  // sorted by arrival (stable) after parsing
  std::vector<PolicyPair> policies;
  std::vector<QuotaSpec> quotas;
  std::vector<CordonSpec> cordons;
};

// What one `vgpu sim` run is sized for (docs/sim.md, "Limits"): bounds on operator input, so that
// a typo or a hostile file is a clear error, not memory grown until the machine gives out. The
// largest run measured is 5,000 nodes x 8 GPUs with 10,000 pods (release build, ~1 GiB); 20,000
// nodes took 2.4 GiB and 3.6 minutes to start under ASan. Twice the nodes, ten times the pods.
struct ScenarioLimits {
  static constexpr int kMaxNodes = 10000;
  static constexpr int kMaxGpusPerNode = 64;
  static constexpr int kMaxGpus = 100000;  // over all nodes
  static constexpr int kMaxPods = 100000;
  static constexpr int64_t kMaxGpuMemoryMiB = int64_t{1} << 24;  // 16 TiB: beyond any card
  static constexpr double kMaxVirtualSeconds = 1e9;              // arrival, interval, duration
  static constexpr size_t kMaxFileBytes = size_t{4} << 20;       // a scenario file
};

// Parses the YAML scenario format documented in docs/sim.md. Errors name the offending entry.
// Counts are expanded only within ScenarioLimits.
Result<Scenario> ParseScenarioYaml(std::string_view text);

// Checks a scenario built in code or parsed: unique node/pod/GPU names, positive sizes, known
// policies, percentages and cores within 0-100, finite times, ScenarioLimits. Sorts nothing.
Status ValidateScenario(const Scenario& scenario);

// True for the policy words HAMi accepts for nodes / GPUs (GPU: also their combinations).
bool IsKnownNodePolicy(std::string_view policy);
bool IsKnownGpuPolicy(std::string_view policy);

}  // namespace vgpu::sim
