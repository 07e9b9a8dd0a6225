#pragma once

// Parsing of the scheduling policy words (pod annotations and flags).

#include <cstdint>
#include <string_view>

#include "core/base/status.h"
#include "core/sched/types.h"

namespace vgpu::sched {

// "binpack" | "spread" (case-insensitive).
Result<NodePolicy> ParseNodePolicy(std::string_view text);
// "binpack" | "spread" | "topology-aware" (case-insensitive).
Result<GpuPolicy> ParseGpuPolicy(std::string_view text);
// "slot=<int>,core=<int>,memory=<int>"; missing keys keep their default (1). Weights are 0..100.
Result<ScoringWeights> ParseScoringWeights(std::string_view text);

const char* NodePolicyName(NodePolicy p);
const char* GpuPolicyName(GpuPolicy p);

}  // namespace vgpu::sched
