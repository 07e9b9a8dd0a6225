#pragma once

// How well connected the GPUs of each multi-GPU pod are, by the pair scores the nodes' device
// plugins published (`hami.io/node-nvidia-score`): what the topology-aware GPU policy changes in
// a run. Pure; shares only the annotation's decoder with the scheduler, none of its choice.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/cluster/invariants.h"

namespace vgpu::sim {

struct TopologyStats {
  int scored_nodes = 0;       // nodes that published pair scores
  int multi_gpu_pods = 0;     // placed pods holding two or more GPUs of a scored node
  int all_nvlinked = 0;       // ... whose every pair of GPUs has an NVLink
  double pair_score_sum = 0;  // ... summed: each pod's mean pair score over its GPU pairs

  double mean_pair_score() const {
    return multi_gpu_pods > 0 ? pair_score_sum / multi_gpu_pods : 0;
  }
};

// Node name -> GPU UUID -> peer UUID -> score.
using NodePairScores = std::map<std::string, std::map<std::string, std::map<std::string, int64_t>>>;

// The scores of every node with a readable annotation; others are left out (no scores, as the
// scheduler reads them) and counted nowhere.
NodePairScores PairScoresOfNodes(const std::vector<nlohmann::json>& nodes);

// Adds one placed pod (its node, its vGPUs) to `stats`; a pod on fewer than two GPUs or on a node
// without scores adds nothing. A pair missing from the scores scores 0, as in the scheduler.
void CountPlacement(const NodePairScores& scores, const std::string& node,
                    const std::vector<AllocatedVgpu>& devices, TopologyStats& stats);

}  // namespace vgpu::sim
