#include "deviceplugin/devices.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace vgpu::deviceplugin {

std::vector<Replica> BuildReplicas(const std::vector<GpuDevice>& gpus, int split_count,
                                   const std::set<std::string>& unhealthy) {
  std::vector<Replica> out;
  out.reserve(gpus.size() * static_cast<size_t>(std::max(split_count, 0)));
  for (const auto& g : gpus) {
    for (int i = 0; i < split_count; ++i) {
      out.push_back(
          {g.uuid + "-" + std::to_string(i), g.uuid, !unhealthy.contains(g.uuid), g.numa});
    }
  }
  return out;
}

codec::NodeInventory BuildInventory(const std::vector<GpuDevice>& gpus, const SplitConfig& split,
                                    const std::set<std::string>& unhealthy) {
  codec::NodeInventory inv;
  for (const auto& g : gpus) {
    codec::DeviceInfo d;
    d.id = g.uuid;
    d.index = g.index;
    d.count = split.split_count;
    d.devmem = static_cast<int64_t>(
        std::llround(static_cast<double>(g.memory_mib) * split.memory_scaling));
    d.devcore = static_cast<int32_t>(std::lround(100.0 * split.core_scaling));
    d.type = codec::NvidiaDeviceType(g.model);
    d.numa = g.numa;
    d.mode = split.mode;
    d.health = !unhealthy.contains(g.uuid);
    inv.push_back(std::move(d));
  }
  return inv;
}

std::string EncodeNodePairScores(const codec::GpuTopology& topology,
                                 const std::vector<GpuDevice>& gpus,
                                 std::vector<std::pair<std::string, std::string>>* asymmetric) {
  std::vector<std::string> uuids;
  uuids.reserve(gpus.size());
  for (const auto& g : gpus) uuids.push_back(g.uuid);
  const codec::GpuTopology mine = codec::SelectGpus(topology, uuids);
  std::vector<std::pair<size_t, size_t>> odd;
  std::string scores = codec::EncodePairScores(codec::ScoreTopology(mine, &odd));
  if (asymmetric != nullptr) {
    for (const auto& [a, b] : odd) asymmetric->emplace_back(mine.gpus[a].uuid, mine.gpus[b].uuid);
  }
  return scores;
}

std::string GpuOfReplica(const std::string& replica_id) {
  size_t dash = replica_id.rfind('-');
  if (dash == std::string::npos || dash + 1 == replica_id.size()) {
    return replica_id;
  }
  for (size_t i = dash + 1; i < replica_id.size(); ++i) {
    if (replica_id[i] < '0' || replica_id[i] > '9') {
      return replica_id;
    }
  }
  return replica_id.substr(0, dash);
}

std::vector<GpuDevice> FilterGpus(const std::vector<GpuDevice>& gpus,
                                  const std::vector<std::string>& uuids,
                                  const std::vector<int>& indexes) {
  std::vector<GpuDevice> out;
  for (const auto& g : gpus) {
    bool drop = std::find(uuids.begin(), uuids.end(), g.uuid) != uuids.end() ||
                std::find(indexes.begin(), indexes.end(), g.index) != indexes.end();
    if (!drop) {
      out.push_back(g);
    }
  }
  return out;
}

std::vector<std::string> PreferReplicas(const std::vector<std::string>& available,
                                        const std::vector<std::string>& must_include, size_t size) {
  std::vector<std::string> chosen(must_include.begin(), must_include.end());
  std::set<std::string> used_gpus;
  std::set<std::string> taken(must_include.begin(), must_include.end());
  for (const auto& id : must_include) {
    used_gpus.insert(GpuOfReplica(id));
  }

  // Free replicas per GPU, in a stable order (first appearance).
  std::map<std::string, std::vector<std::string>> free;
  std::vector<std::string> order;
  for (const auto& id : available) {
    if (taken.contains(id)) {
      continue;
    }
    const std::string gpu = GpuOfReplica(id);
    if (!free.contains(gpu)) {
      order.push_back(gpu);
    }
    free[gpu].push_back(id);
  }
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    return free[a].size() > free[b].size();
  });
  // First pass: one replica per unused GPU; second pass: fill up if GPUs ran out.
  for (int pass = 0; pass < 2 && chosen.size() < size; ++pass) {
    for (const auto& gpu : order) {
      if (chosen.size() >= size) {
        break;
      }
      if (pass == 0 && used_gpus.contains(gpu)) {
        continue;
      }
      auto& ids = free[gpu];
      while (!ids.empty() && chosen.size() < size) {
        chosen.push_back(ids.front());
        ids.erase(ids.begin());
        used_gpus.insert(gpu);
        if (pass == 0) {
          break;
        }
      }
    }
  }
  if (chosen.size() > size) {
    chosen.resize(size);
  }
  return chosen;
}

}  // namespace vgpu::deviceplugin
