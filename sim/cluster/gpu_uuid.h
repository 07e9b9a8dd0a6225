#pragma once

#include <string>
#include <string_view>

namespace vgpu::sim {

// A stable, NVIDIA-shaped UUID ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx") for the index-th GPU of
// a simulated node, so that runs and reports are reproducible and UUIDs are unique per cluster.
std::string SimulatedGpuUuid(std::string_view node_name, int index);

}  // namespace vgpu::sim
