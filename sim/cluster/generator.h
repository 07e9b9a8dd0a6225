#pragma once

// Scenarios made in code: the large generated ones (`vgpu sim --nodes N --gpus-per-node G
// --pods P`) and the built-in one `vgpu sim` runs without arguments.

#include <cstdint>
#include <string_view>

#include "sim/cluster/scenario.h"

namespace vgpu::sim {

struct GeneratorOptions {
  int nodes = 100;
  int gpus_per_node = 8;
  int pods = 2000;
  uint64_t seed = 1;
  double arrival_interval_s = 0.01;  // virtual seconds between arrivals
  double finite_fraction = 0.3;      // share of pods that end (and free capacity) after a while
  int split_count = 10;
};

// Nodes cycle through A100 40GB / H100 80GB / L4 24GB models; pods mix small and large fractional
// vGPUs, percentage memory, multi-GPU, whole cards and model selectors. Same options, same result.
Scenario GenerateScenario(const GeneratorOptions& options);

// The YAML text of the built-in scenario: a few nodes, ~20 pods, binpack next to spread.
std::string_view BuiltinScenarioYaml();

}  // namespace vgpu::sim
