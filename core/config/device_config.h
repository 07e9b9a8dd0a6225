#pragma once

// HAMi's configuration files (hami-compat.md §8), parsed from text into structs:
//  - device-config.yaml, section `nvidia:` (scheduler and device plugin settings);
//  - config.json per-node overrides (`nodeconfig` list).
// Parsing is pure; see config_files.h for reading them from disk. Unknown keys are ignored (HAMi
// files carry many we do not use); a known key of the wrong type is an error naming the key.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/codec/annotations.h"
#include "core/codec/pod_resources.h"
#include "vgpu/env_contract.h"

namespace vgpu::config {

// `gpuCorePolicy`, exported to containers as GPU_CORE_UTILIZATION_POLICY (VGPU_ENV_CORE_POLICY).
inline constexpr std::string_view kCorePolicyDefault = VGPU_CORE_POLICY_DEFAULT;
inline constexpr std::string_view kCorePolicyForce = VGPU_CORE_POLICY_FORCE;
inline constexpr std::string_view kCorePolicyDisable = VGPU_CORE_POLICY_DISABLE;

// Operating modes this device plugin can run a node in (codec::annotations' mode words). HAMi's
// `mig` is refused: vgpu does not partition GPUs into MIG instances, and a node that claimed it
// would hand out whole GPUs under a MIG label.
inline constexpr std::string_view kOperatingModeHamiCore = annotations::kModeHamiCore;
inline constexpr std::string_view kOperatingModeMps = annotations::kModeMps;

struct NvidiaConfig {
  std::string resource_count_name = "nvidia.com/gpu";
  std::string resource_memory_name = "nvidia.com/gpumem";
  std::string resource_core_name = "nvidia.com/gpucores";
  std::string resource_memory_percentage_name = "nvidia.com/gpumem-percentage";
  std::string resource_priority_name = "nvidia.com/priority";
  int64_t default_memory = 0;  // MiB, 0 = whole card
  int32_t default_cores = 0;
  int32_t default_gpu_num = 1;
  int32_t device_split_count = 10;
  double device_memory_scaling = 1.0;
  double device_core_scaling = 1.0;
  bool disable_core_limit = false;
  std::string gpu_core_policy{kCorePolicyDefault};
  // HAMi's `enableNumaTopology`: whether kubelet is told each GPU's NUMA node (device plugin
  // ListAndWatch). Unset: NodeSettings' default.
  std::optional<bool> enable_numa_topology;

  codec::ResourceNames resource_names() const;
  friend bool operator==(const NvidiaConfig&, const NvidiaConfig&) = default;
};

// Parses device-config.yaml text; an empty document or one without `nvidia:` gives defaults.
Result<NvidiaConfig> ParseDeviceConfigYaml(std::string_view yaml);

// One entry of config.json's `nodeconfig`; unset fields do not override.
struct NodeOverride {
  std::string name;
  std::optional<int32_t> device_split_count;
  std::optional<double> device_memory_scaling;
  std::optional<double> device_core_scaling;
  std::vector<std::string> filter_uuids;  // devices never advertised on this node
  std::vector<int32_t> filter_indices;
  // HAMi's `operatingmode`: hami-core (time-sliced, libvgpu limits SMs) or mps (every GPU of the
  // node runs an MPS control daemon; docs/mps.md). Checked in MergeNodeSettings.
  std::optional<std::string> operating_mode;
  std::optional<bool> enable_numa_topology;  // HAMi's `enablenumatopology`

  friend bool operator==(const NodeOverride&, const NodeOverride&) = default;
};

Result<std::vector<NodeOverride>> ParseNodeConfigJson(std::string_view json_text);

// Settings given on the command line; set fields win over both files.
struct FlagOverrides {
  std::optional<int32_t> device_split_count;
  std::optional<double> device_memory_scaling;
  std::optional<double> device_core_scaling;
  std::optional<bool> disable_core_limit;
  std::optional<std::string> gpu_core_policy;
  std::optional<std::string> operating_mode;
  std::optional<bool> numa_topology;
};

// What applies to one node: defaults < device-config.yaml < its config.json entry < flags.
// The operating mode must be hami-core or mps.
struct NodeSettings {
  int32_t device_split_count = 10;
  double device_memory_scaling = 1.0;
  double device_core_scaling = 1.0;
  bool disable_core_limit = false;
  std::string gpu_core_policy{kCorePolicyDefault};
  std::vector<std::string> filter_uuids;
  std::vector<int32_t> filter_indices;
  std::string operating_mode{kOperatingModeHamiCore};
  // Each device kubelet gets carries its GPU's NUMA node. On by default (kubelet's Topology
  // Manager can then align CPUs and GPUs); HAMi's enableNumaTopology, whose default is false,
  // turns it off so that a HAMi values file keeps HAMi's admission behaviour.
  bool numa_topology = true;

  friend bool operator==(const NodeSettings&, const NodeSettings&) = default;
};

// Errors when the merged values are out of range (e.g. split count 0), naming their source.
Result<NodeSettings> MergeNodeSettings(const NvidiaConfig& device,
                                       const std::vector<NodeOverride>& nodes,
                                       std::string_view node_name, const FlagOverrides& flags);

}  // namespace vgpu::config
