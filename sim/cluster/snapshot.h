#pragma once

// Builds the invariant checker's view from API objects: node inventories from
// `hami.io/node-nvidia-register`, pod requests from their specs, placements from
// `hami.io/vgpu-devices-allocated`. Pure (takes JSON objects, does no I/O).

#include <nlohmann/json.hpp>
#include <vector>

#include "sim/cluster/invariants.h"

namespace vgpu::sim {

// Nodes without an inventory annotation have no GPUs. Terminal pods (Succeeded/Failed) and pods
// asking for no GPU are left out. A garbage annotation is an error naming the object.
Result<ClusterSnapshot> SnapshotFromObjects(const std::vector<nlohmann::json>& nodes,
                                            const std::vector<nlohmann::json>& pods,
                                            const RequestDefaults& defaults = {});

}  // namespace vgpu::sim
