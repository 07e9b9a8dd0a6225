#pragma once

// Parsing of the scheduling policy words (pod annotations and flags).

#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/sched/types.h"

namespace vgpu::sched {

// "binpack" | "spread" (case-insensitive).
Result<NodePolicy> ParseNodePolicy(std::string_view text);
// A comma-separated list of binpack, spread, numa, topology-aware and mutex (case-insensitive,
// repeats ignored), as HAMi reads hami.io/gpu-scheduler-policy. Unlike HAMi, which ignores words
// it does not know and lets the first of binpack/spread win, an unknown word or both binpack and
// spread is an error: either is a typo that would otherwise place the pod silently elsewhere.
Result<GpuPolicy> ParseGpuPolicy(std::string_view text);
// "slot=<int>,core=<int>,memory=<int>" (HAMi: non-negative integers, at least one positive, no
// key twice). Unlike HAMi a missing key keeps its default (1) instead of being an error.
inline constexpr int64_t kMaxScoringWeight = 1'000'000;
Result<ScoringWeights> ParseScoringWeights(std::string_view text);

const char* NodePolicyName(NodePolicy p);
// The canonical text of a policy: ranking keys as written, then topology-aware, then mutex
// ("binpack,numa,mutex"); ParseGpuPolicy reads it back to the same value. A policy that names
// nothing at all (GpuPolicy{}) ranks as spread and is written so.
std::string GpuPolicyName(const GpuPolicy& p);

}  // namespace vgpu::sched
