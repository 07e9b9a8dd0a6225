#pragma once

// Renders run results for people (tables) and programs (JSON). Pure: strings in, strings out.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cluster/run_result.h"

namespace vgpu::sim {

struct ReportOptions {
  size_t max_rows = 40;  // per table; the rest is summarised in one line (0 = no limit)
};

// One run: placement table, per-GPU allocation, rejected pods, timing, invariants.
std::string RenderRunText(const RunResult& run, const ReportOptions& options = {});

// Several runs of the same scenario side by side (the built-in binpack vs spread demo):
// per-pod placement and per-GPU use in one column per policy, then a summary per policy.
std::string RenderComparisonText(const std::vector<RunResult>& runs,
                                 const ReportOptions& options = {});

nlohmann::json RunToJson(const RunResult& run);

// "12.3" style fixed formatting shared by the tables.
std::string FormatFixed(double value, int decimals);

}  // namespace vgpu::sim
