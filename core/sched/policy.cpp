#include "core/sched/policy.h"

#include <algorithm>
#include <limits>
#include <optional>
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
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("GPU scheduler policy \"" + std::string(text) + "\" " + why +
                           " (want a comma-separated list of binpack or spread, numa, "
                           "topology-aware, mutex)");
  };
  GpuPolicy p;
  bool named = false;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string word = Lower(TrimSpace(rest.substr(0, comma)));
    if (!word.empty()) {
      named = true;
      if (word == "mutex") {
        p.mutex = true;
      } else if (word == "topology-aware") {
        p.topology_aware = true;
      } else if (word == "binpack" || word == "spread" || word == "numa") {
        const GpuSortKey key = word == "binpack"  ? GpuSortKey::kBinpack
                               : word == "spread" ? GpuSortKey::kSpread
                                                  : GpuSortKey::kNuma;
        const auto end = p.keys.begin() + p.key_count;
        if (std::find(p.keys.begin(), end, key) == end) p.keys[p.key_count++] = key;
      } else {
        return bad("has the unknown word \"" + word + "\"");
      }
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (!named) return bad("names no policy");
  const auto end = p.keys.begin() + p.key_count;
  if (std::find(p.keys.begin(), end, GpuSortKey::kBinpack) != end &&
      std::find(p.keys.begin(), end, GpuSortKey::kSpread) != end) {
    return bad("asks for both binpack and spread; they rank GPUs in opposite orders");
  }
  return p;
}

Result<ScoringWeights> ParseScoringWeights(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("device scoring weights \"" + std::string(text) + "\": " + why +
                           " (want slot=<int>,core=<int>,memory=<int>)");
  };
  ScoringWeights w;
  bool seen[3] = {false, false, false};
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = TrimSpace(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return bad("\"" + std::string(item) + "\" is not key=value");
    const std::string key = Lower(TrimSpace(item.substr(0, eq)));
    int slot = -1;
    if (key == "slot") slot = 0;
    if (key == "core") slot = 1;
    if (key == "memory" || key == "mem") slot = 2;
    if (slot < 0) return bad("unknown weight \"" + key + "\"");
    if (seen[slot]) return bad("\"" + key + "\" is given twice");
    seen[slot] = true;
    const std::optional<int64_t> parsed = ParseInt<int64_t>(TrimSpace(item.substr(eq + 1)));
    // HAMi takes any non-negative int64; the bound keeps the weighted sum exact in a double and
    // is far beyond any useful ratio.
    if (!parsed || *parsed < 0 || *parsed > kMaxScoringWeight) {
      return bad("\"" + key + "\" needs an integer 0.." + std::to_string(kMaxScoringWeight));
    }
    (slot == 0 ? w.slot : slot == 1 ? w.core : w.memory) = static_cast<int>(*parsed);
  }
  if (w.slot == 0 && w.core == 0 && w.memory == 0) return bad("at least one weight must be > 0");
  return w;
}

const char* NodePolicyName(NodePolicy p) {
  return p == NodePolicy::kBinpack ? "binpack" : "spread";
}

std::string GpuPolicyName(const GpuPolicy& p) {
  std::string out;
  const auto add = [&](const char* word) {
    if (!out.empty()) out += ',';
    out += word;
  };
  for (uint8_t i = 0; i < p.key_count; ++i) {
    const GpuSortKey k = p.keys[i];
    add(k == GpuSortKey::kBinpack ? "binpack" : k == GpuSortKey::kSpread ? "spread" : "numa");
  }
  if (p.topology_aware) add("topology-aware");
  if (p.mutex) add("mutex");
  return out.empty() ? "spread" : out;
}

}  // namespace vgpu::sched
