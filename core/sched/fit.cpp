#include "core/sched/fit.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <string_view>

#include "core/codec/annotations.h"

namespace vgpu::sched {
namespace {

char AsciiLower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Whether `haystack` holds `needle_lower` (already lower case), ignoring ASCII case. No copy: the
// filter asks this for every GPU of every node it is offered (4,000 per pod at 500 nodes x 8).
bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle_lower) {
  return std::search(haystack.begin(), haystack.end(), needle_lower.begin(), needle_lower.end(),
                     [](char h, char n) { return AsciiLower(h) == n; }) != haystack.end() ||
         needle_lower.empty();
}

bool TypeAllowed(const GpuDevice& gpu, const PodRequest& pod) {
  if (pod.use_types.empty() && pod.nouse_types.empty()) return true;
  const std::string_view type = gpu.type;
  if (!pod.use_types.empty() &&
      std::none_of(pod.use_types.begin(), pod.use_types.end(),
                   [&](const std::string& t) { return ContainsIgnoreCase(type, t); })) {
    return false;
  }
  return std::none_of(pod.nouse_types.begin(), pod.nouse_types.end(),
                      [&](const std::string& t) { return ContainsIgnoreCase(type, t); });
}

bool UuidAllowed(const GpuDevice& gpu, const PodRequest& pod) {
  if (!pod.use_uuids.empty() && pod.use_uuids.count(gpu.uuid) == 0) return false;
  return pod.nouse_uuids.empty() || pod.nouse_uuids.count(gpu.uuid) == 0;
}

// The no-mixing rule of docs/mps.md: a pod that names modes gets GPUs of those modes only. And an
// MPS client process reaches one control daemon (one pipe directory), while each daemon serves
// one GPU, so an MPS GPU takes containers of one vGPU only, whatever the pod asked.
bool ModeAllowed(const GpuDevice& gpu, const ContainerRequest& req, const PodRequest& pod) {
  const std::string& mode = gpu.mode.empty() ? std::string(annotations::kModeHamiCore) : gpu.mode;
  if (!pod.modes.empty() && pod.modes.count(mode) == 0) return false;
  return !(mode == annotations::kModeMps && req.count > 1);
}

// HAMi counts a mode mismatch as CardTypeMismatch; this says which rule it was.
std::string ModeHint(const NodeView& node, const ContainerRequest& req, const PodRequest& pod) {
  std::string hint;
  if (!pod.modes.empty()) {
    std::string list;
    for (const std::string& m : pod.modes) list += (list.empty() ? "" : ",") + m;
    hint = " (pod asks nvidia.com/vgpu-mode " + list + ")";
  }
  if (req.count > 1 && std::any_of(node.gpus.begin(), node.gpus.end(), [](const GpuDevice& g) {
        return g.mode == annotations::kModeMps;
      })) {
    hint += " (MPS GPUs take containers of one vGPU only)";
  }
  return hint;
}

int PairScore(const PairScores& scores, const std::string& a, const std::string& b) {
  auto it = scores.find(a);
  if (it != scores.end()) {
    auto jt = it->second.find(b);
    if (jt != it->second.end()) return jt->second;
  }
  it = scores.find(b);
  if (it != scores.end()) {
    auto jt = it->second.find(a);
    if (jt != it->second.end()) return jt->second;
  }
  return 0;
}

// Picks `count` GPUs out of `ranked` (indices into node.gpus, best first) maximising the sum of
// pair scores; greedy from every start, ties keep policy order. n <= 16 in practice.
std::vector<size_t> PickTopology(const NodeView& node, const std::vector<size_t>& ranked,
                                 size_t count) {
  std::vector<size_t> best;
  long best_total = -1;
  for (size_t s = 0; s < ranked.size(); ++s) {
    std::vector<size_t> set{ranked[s]};
    long total = 0;
    while (set.size() < count) {
      long gain_best = -1;
      size_t pick = 0;
      for (size_t c : ranked) {
        if (std::find(set.begin(), set.end(), c) != set.end()) continue;
        long gain = 0;
        for (size_t m : set)
          gain += PairScore(node.pair_scores, node.gpus[c].uuid, node.gpus[m].uuid);
        if (gain > gain_best) {
          gain_best = gain;
          pick = c;
        }
      }
      set.push_back(pick);
      total += gain_best;
    }
    if (total > best_total) {
      best_total = total;
      best = std::move(set);
    }
  }
  return best;
}

// HAMi's single-GPU choice under topology-aware: the candidate whose pair scores to the other
// candidates sum lowest, i.e. the GPU whose links matter least to a later multi-GPU pod (the one
// whose NVLink partner is already taken, or a PCIe-only card), so NVLinked sets stay whole.
// Ties keep policy order. O(candidates^2), n <= 16 in practice.
size_t PickLeastConnected(const NodeView& node, const std::vector<size_t>& ranked) {
  size_t pick = ranked.front();
  long lowest = 0;
  for (size_t k = 0; k < ranked.size(); ++k) {
    const size_t c = ranked[k];
    long total = 0;
    for (size_t m : ranked) {
      if (m != c) total += PairScore(node.pair_scores, node.gpus[c].uuid, node.gpus[m].uuid);
    }
    if (k == 0 || total < lowest) {
      lowest = total;
      pick = c;
    }
  }
  return pick;
}

std::string Tally(const std::array<int, static_cast<size_t>(Reason::kCount)>& counts) {
  std::string out;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::to_string(counts[i]) + " " + std::string(ReasonName(static_cast<Reason>(i)));
  }
  return out;
}

struct ContainerFit {
  bool ok = false;
  std::vector<AllocatedDevice> devices;
  std::vector<size_t> indices;
  Reason reason = Reason::kNodeInsufficientDevice;
  std::string message;
};

ContainerFit FitContainer(const NodeView& node, const std::vector<DeviceUsage>& usage,
                          const ContainerRequest& req, const PodRequest& pod, size_t container,
                          std::array<int, static_cast<size_t>(Reason::kCount)>& tally) {
  ContainerFit fit;
  std::vector<size_t> candidates;
  candidates.reserve(node.gpus.size());
  std::array<int, static_cast<size_t>(Reason::kCount)> local{};
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuDevice& gpu = node.gpus[i];
    const bool cordoned = !node.cordoned.empty() && node.cordoned.count(gpu.uuid) > 0;
    if (auto r = CheckGpu(gpu, usage[i], cordoned, req, pod)) {
      ++local[static_cast<size_t>(*r)];
      continue;
    }
    candidates.push_back(i);
  }
  for (size_t i = 0; i < local.size(); ++i) tally[i] += local[i];
  const size_t want = static_cast<size_t>(req.count);
  const auto fail = [&](Reason r, const std::string& why) {
    fit.reason = r;
    fit.message = std::string(ReasonName(r)) + ": container " + std::to_string(container) +
                  " needs " + std::to_string(want) + " GPU(s), " + why;
    const std::string t = Tally(local);
    if (!t.empty()) fit.message += "; GPUs rejected: " + t;
    if (local[static_cast<size_t>(Reason::kCardTypeMismatch)] > 0) {
      fit.message += ModeHint(node, req, pod);
    }
    return fit;
  };
  if (candidates.size() < want) {
    Reason r = Reason::kNodeInsufficientDevice;
    if (candidates.empty() && !node.gpus.empty()) {
      // Every GPU said no: the most common GPU reason is the most useful word.
      const auto most = std::max_element(local.begin(), local.end());
      r = static_cast<Reason>(most - local.begin());
    }
    return fail(
        r, std::to_string(candidates.size()) + " of " + std::to_string(node.gpus.size()) + " fit");
  }

  std::vector<double> fullness(node.gpus.size(), 0.0);
  for (size_t i : candidates) fullness[i] = GpuFullness(node.gpus[i], usage[i], pod.weights);
  // The policy's ranking keys in the order written; the first that tells two GPUs apart
  // decides, and equal GPUs keep node order (stable sort below).
  const std::span<const GpuSortKey> order = pod.gpu_policy.Order();
  const auto before = [&](size_t a, size_t b) {
    for (GpuSortKey key : order) {
      switch (key) {
        case GpuSortKey::kBinpack:
          if (fullness[a] != fullness[b]) return fullness[a] > fullness[b];
          break;
        case GpuSortKey::kSpread:
          if (fullness[a] != fullness[b]) return fullness[a] < fullness[b];
          break;
        case GpuSortKey::kNuma:
          if (node.gpus[a].numa != node.gpus[b].numa) return node.gpus[a].numa < node.gpus[b].numa;
          break;
      }
    }
    return false;
  };
  // Stable insertion sort: a node has a handful of GPUs, and std::stable_sort allocates.
  for (size_t k = 1; k < candidates.size(); ++k) {
    const size_t v = candidates[k];
    size_t j = k;
    for (; j > 0 && before(v, candidates[j - 1]); --j) candidates[j] = candidates[j - 1];
    candidates[j] = v;
  }

  std::vector<size_t> numa_pool;
  const std::vector<size_t>* pool = &candidates;
  if (pod.numa_bind && want > 1) {
    // The best-ranked NUMA node that can hold the whole container.
    std::map<int, size_t> per_numa;
    for (size_t i : candidates) ++per_numa[node.gpus[i].numa];
    std::optional<int> chosen;
    for (size_t i : candidates) {
      if (per_numa[node.gpus[i].numa] >= want) {
        chosen = node.gpus[i].numa;
        break;
      }
    }
    if (!chosen) {
      ++tally[static_cast<size_t>(Reason::kNumaNotFit)];
      return fail(Reason::kNumaNotFit, "no NUMA node has that many free GPUs");
    }
    for (size_t i : candidates) {
      if (node.gpus[i].numa == *chosen) numa_pool.push_back(i);
    }
    pool = &numa_pool;
  }

  if (pod.gpu_policy.topology_aware && !node.pair_scores.empty() && pool->size() > want) {
    fit.indices = want == 1 ? std::vector<size_t>{PickLeastConnected(node, *pool)}
                            : PickTopology(node, *pool, want);
  } else {
    fit.indices.assign(pool->begin(), pool->begin() + static_cast<long>(want));
  }
  fit.devices.reserve(want);
  for (size_t i : fit.indices) {
    fit.devices.push_back({node.gpus[i].uuid, MemoryNeeded(req, node.gpus[i]), req.cores});
  }
  fit.ok = true;
  return fit;
}

void Add(DeviceUsage& u, const AllocatedDevice& d) {
  u.slots += 1;
  u.mem_mib += d.mem_mib;
  u.cores += d.cores;
}

}  // namespace

int64_t MemoryNeeded(const ContainerRequest& req, const GpuDevice& gpu) {
  if (req.mem_percent >= 0) return gpu.mem_mib * req.mem_percent / 100;
  return req.mem_mib;
}

std::optional<Reason> CheckGpu(const GpuDevice& gpu, const DeviceUsage& used, bool cordoned,
                               const ContainerRequest& req, const PodRequest& pod) {
  if (!gpu.healthy) return Reason::kCardNotHealth;
  if (cordoned) return Reason::kCardCordoned;
  if (!TypeAllowed(gpu, pod)) return Reason::kCardTypeMismatch;
  if (!UuidAllowed(gpu, pod)) return Reason::kCardUuidMismatch;
  if (!ModeAllowed(gpu, req, pod)) return Reason::kCardTypeMismatch;
  if (used.slots >= gpu.slots) return Reason::kCardTimeSlicingExhausted;
  // HAMi's mutex: only a GPU nobody uses, not even an earlier container of the same pod; HAMi
  // counts it under the same word as an exclusive (100-core) ask meeting a shared card.
  if (pod.gpu_policy.mutex && used.slots > 0) return Reason::kExclusiveDeviceAllocateConflict;
  if (req.cores >= 100 && used.slots > 0) return Reason::kExclusiveDeviceAllocateConflict;
  if (req.cores == 0 && gpu.cores > 0 && used.cores >= gpu.cores) {
    return Reason::kCardComputeUnitsExhausted;  // someone holds the card exclusively
  }
  const int64_t need = MemoryNeeded(req, gpu);
  // A 0-MiB vGPU would be handed to the container as CUDA_DEVICE_MEMORY_LIMIT_<i>=0m, which
  // libvgpu.so (HAMi-core) reads as "unlimited": a card too small for the percentage (1 % of
  // 50 MiB) or a request that slipped past the parser never gets one.
  if (need <= 0 || gpu.mem_mib - used.mem_mib < need) return Reason::kCardInsufficientMemory;
  if (gpu.cores - used.cores < req.cores) return Reason::kCardInsufficientCore;
  return std::nullopt;
}

double GpuFullness(const GpuDevice& gpu, const DeviceUsage& used, const ScoringWeights& w) {
  const double total = w.slot + w.core + w.memory;
  if (total <= 0) return 0.0;
  const auto frac = [](double a, double b) { return b > 0 ? std::clamp(a / b, 0.0, 1.0) : 1.0; };
  return (w.slot * frac(used.slots, gpu.slots) + w.core * frac(used.cores, gpu.cores) +
          w.memory * frac(static_cast<double>(used.mem_mib), static_cast<double>(gpu.mem_mib))) /
         total;
}

NodeFit FitPod(const NodeView& node, const PodRequest& pod) {
  NodeFit out;
  const size_t n_init = pod.init_containers.size();
  out.allocation.init_count = n_init;
  out.allocation.containers.resize(pod.container_count());
  std::vector<DeviceUsage> app_usage = node.usage;
  app_usage.resize(node.gpus.size());
  const std::vector<DeviceUsage>& base = app_usage;  // init containers see only the node's usage
  for (size_t c = 0; c < n_init; ++c) {
    const ContainerRequest& req = pod.init_containers[c];
    if (!req.wants_gpu()) continue;
    ContainerFit f = FitContainer(node, base, req, pod, c, out.gpu_rejections);
    if (!f.ok) {
      out.reason = f.reason;
      out.message = std::move(f.message);
      return out;
    }
    out.allocation.containers[c] = std::move(f.devices);
  }
  for (size_t c = 0; c < pod.app_containers.size(); ++c) {
    const ContainerRequest& req = pod.app_containers[c];
    if (!req.wants_gpu()) continue;
    ContainerFit f = FitContainer(node, app_usage, req, pod, n_init + c, out.gpu_rejections);
    if (!f.ok) {
      out.reason = f.reason;
      out.message = std::move(f.message);
      return out;
    }
    for (size_t k = 0; k < f.indices.size(); ++k) Add(app_usage[f.indices[k]], f.devices[k]);
    out.allocation.containers[n_init + c] = std::move(f.devices);
  }
  out.ok = true;
  return out;
}

std::map<std::string, DeviceUsage> PodFootprint(const PodAllocation& alloc) {
  std::map<std::string, DeviceUsage> init_peak, app_sum;
  for (size_t c = 0; c < alloc.containers.size(); ++c) {
    if (c < alloc.init_count) {
      std::map<std::string, DeviceUsage> one;
      for (const AllocatedDevice& d : alloc.containers[c]) Add(one[d.uuid], d);
      for (const auto& [uuid, u] : one) {
        DeviceUsage& p = init_peak[uuid];
        p.slots = std::max(p.slots, u.slots);
        p.mem_mib = std::max(p.mem_mib, u.mem_mib);
        p.cores = std::max(p.cores, u.cores);
      }
    } else {
      for (const AllocatedDevice& d : alloc.containers[c]) Add(app_sum[d.uuid], d);
    }
  }
  for (const auto& [uuid, p] : init_peak) {
    DeviceUsage& a = app_sum[uuid];
    a.slots = std::max(a.slots, p.slots);
    a.mem_mib = std::max(a.mem_mib, p.mem_mib);
    a.cores = std::max(a.cores, p.cores);
  }
  return app_sum;
}

int NodeScore(const NodeView& node, const PodAllocation& alloc, NodePolicy policy,
              const ScoringWeights& w) {
  if (node.gpus.empty()) return 0;
  std::vector<DeviceUsage> after = node.usage;
  after.resize(node.gpus.size());
  const auto add = [&](const std::string& uuid, const DeviceUsage& u) {
    for (size_t i = 0; i < node.gpus.size(); ++i) {
      if (node.gpus[i].uuid == uuid) {
        after[i] += u;
        return;
      }
    }
  };
  if (alloc.init_count == 0) {
    // The common case (no init container with GPUs) without building a footprint map.
    for (const auto& c : alloc.containers) {
      for (const AllocatedDevice& d : c) add(d.uuid, {1, d.mem_mib, d.cores});
    }
  } else {
    for (const auto& [uuid, u] : PodFootprint(alloc)) add(uuid, u);
  }
  double sum = 0;
  for (size_t i = 0; i < node.gpus.size(); ++i) sum += GpuFullness(node.gpus[i], after[i], w);
  const double fullness = sum / static_cast<double>(node.gpus.size());
  const int score = static_cast<int>(std::lround(fullness * 10.0));
  return policy == NodePolicy::kBinpack ? score : 10 - score;
}

}  // namespace vgpu::sched
