#pragma once

// Plain data the scheduling decisions work on. Filled by adapters from node and pod
// annotations (core/codec) and pod specs; no I/O here.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace vgpu::sched {

// One physical GPU as the device plugin advertises it (hami.io/node-nvidia-register).
struct GpuDevice {
  std::string uuid;
  int index = 0;
  int slots = 0;        // vGPU slots (device-split-count)
  int64_t mem_mib = 0;  // already multiplied by memory scaling
  int cores = 100;      // 100 x core scaling
  std::string type;     // codec::NvidiaDeviceType of the model, e.g. "NVIDIA H100 80GB HBM3"
  int numa = 0;
  std::string mode =
      "hami-core";  // hami-core | mig | mps (inventory `mode`; empty reads hami-core)
  bool healthy = true;
};

// What is already taken on one GPU (running pods plus in-flight reservations).
struct DeviceUsage {
  int slots = 0;
  int64_t mem_mib = 0;
  int cores = 0;

  DeviceUsage& operator+=(const DeviceUsage& o) {
    slots += o.slots;
    mem_mib += o.mem_mib;
    cores += o.cores;
    return *this;
  }
  DeviceUsage& operator-=(const DeviceUsage& o) {
    slots -= o.slots;
    mem_mib -= o.mem_mib;
    cores -= o.cores;
    return *this;
  }
  friend bool operator==(const DeviceUsage&, const DeviceUsage&) = default;
};

// NVLink/PCIe pair scores (hami.io/node-nvidia-score): uuid -> (peer uuid -> score).
using PairScores = std::map<std::string, std::map<std::string, int>>;

// Everything the fit needs to know about one node. `usage` is parallel to `gpus`.
struct NodeView {
  std::string name;
  std::vector<GpuDevice> gpus;
  std::vector<DeviceUsage> usage;
  std::set<std::string> cordoned;  // hami.io/device-cordon
  PairScores pair_scores;
};

// The vGPU ask of one container, after defaults.
struct ContainerRequest {
  int count = 0;         // vGPUs, each on a different GPU
  int64_t mem_mib = 0;   // per vGPU; ignored when mem_percent >= 0
  int mem_percent = -1;  // per vGPU, % of the card; -1 = not given
  int cores = 0;         // per vGPU, % of SMs; 100 = exclusive

  bool wants_gpu() const { return count > 0; }
  friend bool operator==(const ContainerRequest&, const ContainerRequest&) = default;
};

enum class NodePolicy { kBinpack, kSpread };
// One ranking key of a GPU policy (hami.io/gpu-scheduler-policy): binpack = fullest GPU first,
// spread = emptiest first, numa = lowest NUMA node first (keeps a container's GPUs together).
enum class GpuSortKey : uint8_t { kBinpack, kSpread, kNuma };

// A GPU policy as HAMi reads it: a comma-separated list such as "binpack,numa,mutex". binpack,
// spread and numa rank the GPUs, in the order written (the first key decides, later ones break
// its ties); mutex and topology-aware are not ranks but rules on the choice. Fixed-size so the
// named single policies below can be constants.
struct GpuPolicy {
  static constexpr size_t kMaxKeys = 3;  // each of binpack/spread/numa at most once
  std::array<GpuSortKey, kMaxKeys> keys{};
  uint8_t key_count = 0;        // 0 = spread (HAMi's fallback when no ranking key is named)
  bool mutex = false;           // only GPUs nobody uses (HAMi's "mutex")
  bool topology_aware = false;  // pick by NVLink/PCIe pair scores among the ranked GPUs

  static const GpuPolicy kBinpack;
  static const GpuPolicy kSpread;
  static const GpuPolicy kTopologyAware;
  static const GpuPolicy kMutex;

  // The effective ranking keys: what was written, or {spread} when none was. No allocation:
  // the fit asks once per container.
  std::span<const GpuSortKey> Order() const {
    static constexpr std::array<GpuSortKey, 1> kSpreadOnly{GpuSortKey::kSpread};
    if (key_count == 0) return kSpreadOnly;
    return {keys.data(), key_count};
  }
  friend bool operator==(const GpuPolicy&, const GpuPolicy&) = default;
};
inline constexpr GpuPolicy GpuPolicy::kBinpack{{GpuSortKey::kBinpack}, 1, false, false};
inline constexpr GpuPolicy GpuPolicy::kSpread{{GpuSortKey::kSpread}, 1, false, false};
inline constexpr GpuPolicy GpuPolicy::kTopologyAware{{}, 0, false, true};
inline constexpr GpuPolicy GpuPolicy::kMutex{{}, 0, true, false};

// Weights of a GPU's fullness terms when ranking GPUs (hami.io/device-scoring-weights).
struct ScoringWeights {
  int slot = 1;
  int core = 1;
  int memory = 1;
  friend bool operator==(const ScoringWeights&, const ScoringWeights&) = default;
};

// The whole pod's ask: init containers first, then app containers, in spec order
// (the order of the hami.io/vgpu-devices-* entries).
struct PodRequest {
  std::vector<ContainerRequest> init_containers;
  std::vector<ContainerRequest> app_containers;
  std::vector<std::string> use_types;    // lower-cased substrings of the model name
  std::vector<std::string> nouse_types;  // lower-cased substrings of the model name
  std::set<std::string> use_uuids;
  std::set<std::string> nouse_uuids;
  bool numa_bind = false;
  // nvidia.com/vgpu-mode: the GPU modes the pod accepts (hami-core, mig, mps); empty = any. A pod
  // without the annotation may land on an MPS GPU and then runs as an MPS client (docs/mps.md).
  std::set<std::string> modes;
  NodePolicy node_policy = NodePolicy::kBinpack;
  GpuPolicy gpu_policy = GpuPolicy::kSpread;
  ScoringWeights weights;

  bool wants_gpu() const;
  size_t container_count() const { return init_containers.size() + app_containers.size(); }
};

// One vGPU handed to a container (one `<uuid>,NVIDIA,<mem>,<cores>:` item).
struct AllocatedDevice {
  std::string uuid;
  int64_t mem_mib = 0;
  int cores = 0;
  friend bool operator==(const AllocatedDevice&, const AllocatedDevice&) = default;
};

// One entry per container, init containers first; containers without GPUs have empty entries.
struct PodAllocation {
  std::vector<std::vector<AllocatedDevice>> containers;
  size_t init_count = 0;  // how many leading entries belong to init containers
  friend bool operator==(const PodAllocation&, const PodAllocation&) = default;
};

}  // namespace vgpu::sched
