#include "core/codec/gpu_topology.h"

#include <algorithm>
#include <cstdio>

#include "core/base/strings.h"

namespace vgpu::codec {
namespace {

// Points of one PCIe path (HAMi's P2PLink types); 0 = no link entry.
int PciePoints(int level) {
  switch (level) {
    case kTopologyInternal:
      return 60;
    case kTopologySingle:
      return 50;
    case kTopologyMultiple:
      return 40;
    case kTopologyHostBridge:
      return 30;
    case kTopologyNode:
      return 20;
    case kTopologySystem:
      return 10;
    default:
      return 0;
  }
}

bool NvLinkEntry(int links) {
  return links >= 1 && links <= kMaxNvLinks;
}

// Link entries HAMi lists from i to j: the PCIe path and the NVLink bundle, when known.
int LinkEntries(const GpuTopology& t, size_t i, size_t j) {
  return (PciePoints(t.pcie_level[i][j]) > 0 ? 1 : 0) +
         (NvLinkEntry(NvLinksBetween(t.gpus[i], t.gpus[j])) ? 1 : 0);
}

std::optional<int> ParseLevel(std::string_view word) {
  static constexpr std::pair<std::string_view, int> kLevels[] = {
      {"internal", kTopologyInternal}, {"single", kTopologySingle},
      {"multiple", kTopologyMultiple}, {"hostbridge", kTopologyHostBridge},
      {"node", kTopologyNode},         {"system", kTopologySystem},
  };
  for (const auto& [name, level] : kLevels) {
    if (word == name) return level;
  }
  return std::nullopt;
}

struct SpecLink {
  int level = kTopologySystem;
  int nvlinks = 0;
};

bool ParseLink(std::string_view text, SpecLink* link) {
  bool have_level = false;
  bool have_nv = false;
  for (std::string_view part : Split(text, '+')) {
    part = TrimSpace(part);
    if (part.size() > 2 && part.substr(0, 2) == "nv") {
      auto n = ParseInt<int>(part.substr(2));
      if (!n || *n < 1 || *n > kMaxNvLinks || have_nv) return false;
      link->nvlinks = *n;
      have_nv = true;
    } else if (auto level = ParseLevel(part); level && !have_level) {
      link->level = *level;
      have_level = true;
    } else {
      return false;
    }
  }
  return have_level || have_nv;
}

std::string FakeBusId(size_t index) {
  char buf[32];
  (void)std::snprintf(buf, sizeof buf, "%08X:%02X:00.0", 0U, 0x18U + static_cast<unsigned>(index));
  return buf;
}

}  // namespace

std::string NormalizeBusId(std::string_view bus_id) {
  std::string id = Lower(bus_id.substr(0, bus_id.find('\0')));
  if (id != "0000" && id.starts_with("0000")) id.erase(0, 4);
  return id;
}

int NvLinksBetween(const TopologyGpu& from, const TopologyGpu& to) {
  const std::string target = NormalizeBusId(to.bus_id);
  const auto direct =
      std::count_if(from.nvlink_remote_bus_ids.begin(), from.nvlink_remote_bus_ids.end(),
                    [&](const std::string& remote) { return NormalizeBusId(remote) == target; });
  if (direct > 0) return static_cast<int>(direct);
  if (from.nvlink_remote_bus_ids.empty()) return 0;
  if (from.nvswitch_links > 0 && to.nvswitch_links > 0) {
    return std::min(from.nvswitch_links, to.nvswitch_links);
  }
  return 0;
}

int64_t PairScore(const GpuTopology& topology, size_t i, size_t j, bool* asymmetric) {
  if (asymmetric != nullptr) *asymmetric = false;
  if (i == j) return 0;
  if (LinkEntries(topology, i, j) != LinkEntries(topology, j, i)) {
    if (asymmetric != nullptr) *asymmetric = true;
    return 0;
  }
  int64_t score = PciePoints(topology.pcie_level[i][j]);
  const int links = NvLinksBetween(topology.gpus[i], topology.gpus[j]);
  if (NvLinkEntry(links)) score += kNvLinkPoints * links;
  return score;
}

DevicePairScores ScoreTopology(const GpuTopology& topology,
                               std::vector<std::pair<size_t, size_t>>* asymmetric) {
  DevicePairScores out;
  const size_t n = topology.gpus.size();
  for (size_t i = 0; i < n; ++i) {
    DevicePairScore d;
    d.uuid = topology.gpus[i].uuid;
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      bool odd = false;
      d.scores[topology.gpus[j].uuid] = PairScore(topology, i, j, &odd);
      if (odd && asymmetric != nullptr && i < j) asymmetric->emplace_back(i, j);
    }
    out.push_back(std::move(d));
  }
  return out;
}

GpuTopology SelectGpus(const GpuTopology& topology, const std::vector<std::string>& uuids) {
  std::vector<size_t> pick;
  for (const std::string& uuid : uuids) {
    for (size_t i = 0; i < topology.gpus.size(); ++i) {
      if (topology.gpus[i].uuid == uuid) {
        pick.push_back(i);
        break;
      }
    }
  }
  GpuTopology out;
  out.pcie_level.assign(pick.size(), std::vector<int>(pick.size(), kTopologyUnknown));
  for (size_t a = 0; a < pick.size(); ++a) {
    out.gpus.push_back(topology.gpus[pick[a]]);
    for (size_t b = 0; b < pick.size(); ++b) {
      if (a != b) out.pcie_level[a][b] = topology.pcie_level[pick[a]][pick[b]];
    }
  }
  return out;
}

Result<GpuTopology> ParseTopologySpec(std::string_view spec,
                                      const std::vector<std::string>& uuids) {
  const size_t n = uuids.size();
  std::string text(TrimSpace(spec));
  if (text == "default") {
    text.clear();
    for (size_t i = 0; i + 1 < n; i += 2) {
      text += std::to_string(i) + "-" + std::to_string(i + 1) + "=node+nv4,";
    }
    text += "*=system";
  }
  const std::string format =
      " (expected a comma list of <i>-<j>=<link> and *=<link>, <link> = internal, single, "
      "multiple, hostbridge, node or system and/or nv<1-18> joined by '+', e.g. "
      "0-1=node+nv4,*=system, or default)";
  SpecLink fallback;
  bool have_fallback = false;
  std::vector<std::pair<std::pair<size_t, size_t>, std::string>> pairs;
  if (!text.empty()) {
    for (std::string_view entry : Split(text, ',')) {
      const size_t eq = entry.find('=');
      if (eq == std::string_view::npos) {
        return InvalidArgument("topology: bad entry '" + std::string(entry) + "'" + format);
      }
      const std::string_view key = TrimSpace(entry.substr(0, eq));
      const std::string_view value = TrimSpace(entry.substr(eq + 1));
      if (key == "*") {
        if (have_fallback) return InvalidArgument("topology: '*' given twice");
        have_fallback = true;
        if (!ParseLink(value, &fallback)) {
          return InvalidArgument("topology: bad link '" + std::string(value) + "'" + format);
        }
        continue;
      }
      const size_t dash = key.find('-');
      auto a =
          dash == std::string_view::npos ? std::nullopt : ParseInt<size_t>(key.substr(0, dash));
      auto b =
          dash == std::string_view::npos ? std::nullopt : ParseInt<size_t>(key.substr(dash + 1));
      if (!a || !b || *a == *b) {
        return InvalidArgument("topology: bad pair '" + std::string(key) + "'" + format);
      }
      if (*a >= n || *b >= n) {
        return InvalidArgument("topology: pair '" + std::string(key) + "' names a GPU beyond the " +
                               std::to_string(n) + " GPUs");
      }
      const std::pair<size_t, size_t> p{std::min(*a, *b), std::max(*a, *b)};
      for (const auto& other : pairs) {
        if (other.first == p) {
          return InvalidArgument("topology: pair '" + std::string(key) + "' given twice");
        }
      }
      pairs.emplace_back(p, std::string(value));
    }
  }
  std::vector<std::vector<SpecLink>> links(n, std::vector<SpecLink>(n, fallback));
  for (const auto& [p, value] : pairs) {
    SpecLink link = fallback;
    if (!ParseLink(value, &link)) {
      return InvalidArgument(std::string("topology: bad link '").append(value).append("'") +
                             format);
    }
    links[p.first][p.second] = link;
    links[p.second][p.first] = link;
  }
  GpuTopology t;
  t.pcie_level.assign(n, std::vector<int>(n, kTopologySystem));
  for (size_t i = 0; i < n; ++i) t.gpus.push_back({uuids[i], FakeBusId(i), {}, 0});
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      t.pcie_level[i][j] = links[i][j].level;
      for (int l = 0; l < links[i][j].nvlinks; ++l) {
        t.gpus[i].nvlink_remote_bus_ids.push_back(t.gpus[j].bus_id);
      }
    }
    if (t.gpus[i].nvlink_remote_bus_ids.size() > static_cast<size_t>(kMaxNvLinks)) {
      return InvalidArgument("topology: GPU " + std::to_string(i) + " has " +
                             std::to_string(t.gpus[i].nvlink_remote_bus_ids.size()) +
                             " NVLinks in all; a GPU has at most " + std::to_string(kMaxNvLinks));
    }
  }
  return t;
}

}  // namespace vgpu::codec
