#pragma once

// Parsing of the scheduling policy words and of Kubernetes quantities used in GPU resources.

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

// A Kubernetes quantity that must be a whole number: "3000", "4k", "2Ki", "1e3".
// GPU resources are counts, MiB and percents, so fractions ("500m", "1.5") are rejected.
Result<int64_t> ParseWholeQuantity(std::string_view text);

}  // namespace vgpu::sched
