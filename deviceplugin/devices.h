#pragma once

// What the node advertises: kubelet replicas (`<UUID>-<i>`, device-split-count per GPU) and
// the inventory annotation the scheduler reads (hami-compat §2), from the discovered GPUs.

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/codec/annotations.h"
#include "core/codec/gpu_topology.h"
#include "core/codec/node_inventory.h"
#include "deviceplugin/gpu_backend.h"

namespace vgpu::deviceplugin {

// How the node shares its GPUs: vGPUs per GPU, scaling, and the operating mode every GPU is
// registered with (hami-core or mps: the scheduler never mixes pods of the two, docs/mps.md).
struct SplitConfig {
  int split_count = 10;
  double memory_scaling = 1.0;
  double core_scaling = 1.0;
  std::string mode{annotations::kModeHamiCore};
};

struct Replica {
  std::string id;  // <UUID>-<i>
  std::string uuid;
  bool healthy = true;
  int numa = 0;
};

std::vector<Replica> BuildReplicas(const std::vector<GpuDevice>& gpus, int split_count,
                                   const std::set<std::string>& unhealthy);

codec::NodeInventory BuildInventory(const std::vector<GpuDevice>& gpus, const SplitConfig& split,
                                    const std::set<std::string>& unhealthy);

// `hami.io/node-nvidia-score` for the GPUs the node registers (`gpus`, in that order) from the
// backend's topology, in HAMi's form. `asymmetric` gets the UUID pairs scored 0 because their two
// directions disagree. The plugin and `vgpu sim`'s allocator-only nodes both publish this.
std::string EncodeNodePairScores(
    const codec::GpuTopology& topology, const std::vector<GpuDevice>& gpus,
    std::vector<std::pair<std::string, std::string>>* asymmetric = nullptr);

// The GPU UUID of a replica ID ("GPU-x-3" -> "GPU-x"); the ID itself when it has no "-<digits>".
std::string GpuOfReplica(const std::string& replica_id);

// Drops GPUs named in the per-node filter (config.json `filterdevices`: UUIDs or NVML indexes).
std::vector<GpuDevice> FilterGpus(const std::vector<GpuDevice>& gpus,
                                  const std::vector<std::string>& uuids,
                                  const std::vector<int>& indexes);

// kubelet's GetPreferredAllocation: `size` replicas out of `available`, containing
// `must_include`, each on a different GPU where possible (a container's vGPUs must sit on
// different GPUs), preferring GPUs with the most free replicas so load spreads.
std::vector<std::string> PreferReplicas(const std::vector<std::string>& available,
                                        const std::vector<std::string>& must_include, size_t size);

}  // namespace vgpu::deviceplugin
