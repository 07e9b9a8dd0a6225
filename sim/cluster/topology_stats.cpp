#include "sim/cluster/topology_stats.h"

#include <set>

#include "core/codec/annotations.h"
#include "core/codec/gpu_topology.h"
#include "core/codec/pair_scores.h"

namespace vgpu::sim {

using nlohmann::json;

NodePairScores PairScoresOfNodes(const std::vector<json>& nodes) {
  NodePairScores out;
  for (const json& n : nodes) {
    const json meta = n.value("metadata", json::object());
    const json ann = meta.value("annotations", json::object());
    const auto text = ann.find(std::string(annotations::kNodeNvidiaScore));
    if (text == ann.end() || !text->is_string()) continue;
    Result<codec::DevicePairScores> decoded = codec::DecodePairScores(text->get<std::string>());
    if (!decoded.ok()) continue;
    auto& node = out[meta.value("name", "")];
    for (const codec::DevicePairScore& d : *decoded) {
      node[d.uuid].insert(d.scores.begin(), d.scores.end());
    }
  }
  return out;
}

void CountPlacement(const NodePairScores& scores, const std::string& node,
                    const std::vector<AllocatedVgpu>& devices, TopologyStats& stats) {
  const auto it = scores.find(node);
  if (it == scores.end()) return;
  std::set<std::string> uuids;
  for (const AllocatedVgpu& d : devices) uuids.insert(d.uuid);
  if (uuids.size() < 2) return;
  const auto score = [&](const std::string& a, const std::string& b) -> int64_t {
    for (const auto& [from, to] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      const auto row = it->second.find(*from);
      if (row == it->second.end()) continue;
      const auto s = row->second.find(*to);
      if (s != row->second.end()) return s->second;
    }
    return 0;
  };
  int64_t sum = 0;
  int pairs = 0;
  bool all_nvlinked = true;
  for (auto a = uuids.begin(); a != uuids.end(); ++a) {
    for (auto b = std::next(a); b != uuids.end(); ++b) {
      const int64_t s = score(*a, *b);
      sum += s;
      ++pairs;
      all_nvlinked = all_nvlinked && s >= codec::kNvLinkPoints;
    }
  }
  ++stats.multi_gpu_pods;
  stats.all_nvlinked += all_nvlinked ? 1 : 0;
  stats.pair_score_sum += static_cast<double>(sum) / pairs;
}

}  // namespace vgpu::sim
