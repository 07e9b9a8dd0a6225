#include "core/sched/policy.h"

#include <limits>
#include <string>

#include "core/base/strings.h"

namespace vgpu::sched {

Result<NodePolicy> ParseNodePolicy(std::string_view text) {
  const std::string t = Lower(TrimSpace(text));
  if (t == "binpack") return NodePolicy::kBinpack;
  if (t == "spread") return NodePolicy::kSpread;
  return InvalidArgument("unknown node scheduler policy \"" + std::string(text) +
                         "\" (want binpack or spread)");
}

Result<GpuPolicy> ParseGpuPolicy(std::string_view text) {
  const std::string t = Lower(TrimSpace(text));
  if (t == "binpack") return GpuPolicy::kBinpack;
  if (t == "spread") return GpuPolicy::kSpread;
  if (t == "topology-aware") return GpuPolicy::kTopologyAware;
  return InvalidArgument("unknown GPU scheduler policy \"" + std::string(text) +
                         "\" (want binpack, spread or topology-aware)");
}

Result<ScoringWeights> ParseScoringWeights(std::string_view text) {
  ScoringWeights w;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = TrimSpace(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("device scoring weight \"" + std::string(item) +
                             "\" is not key=value (want slot=<int>,core=<int>,memory=<int>)");
    }
    const std::string key = Lower(TrimSpace(item.substr(0, eq)));
    const std::optional<int64_t> parsed = ParseInt<int64_t>(TrimSpace(item.substr(eq + 1)));
    const int64_t value = parsed.value_or(-1);
    if (!parsed || value < 0 || value > 100) {
      return InvalidArgument("device scoring weight \"" + std::string(item) +
                             "\" needs an integer 0..100");
    }
    if (key == "slot") {
      w.slot = static_cast<int>(value);
    } else if (key == "core") {
      w.core = static_cast<int>(value);
    } else if (key == "memory" || key == "mem") {
      w.memory = static_cast<int>(value);
    } else {
      return InvalidArgument("unknown device scoring weight \"" + key +
                             "\" (want slot, core or memory)");
    }
  }
  return w;
}

const char* NodePolicyName(NodePolicy p) {
  return p == NodePolicy::kBinpack ? "binpack" : "spread";
}

const char* GpuPolicyName(GpuPolicy p) {
  switch (p) {
    case GpuPolicy::kBinpack:
      return "binpack";
    case GpuPolicy::kSpread:
      return "spread";
    case GpuPolicy::kTopologyAware:
      return "topology-aware";
  }
  return "spread";
}

}  // namespace vgpu::sched
