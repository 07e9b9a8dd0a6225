#include "sim/cluster/generator.h"

#include "sim/cluster/gpu_uuid.h"

namespace vgpu::sim {

namespace {

// splitmix64: a tiny PRNG whose sequence is the same on every platform (the standard
// distributions are not), so a seed names one scenario everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int Below(int n) { return static_cast<int>(Next() % static_cast<uint64_t>(n)); }
  double Unit() { return static_cast<double>(Next() >> 11) / static_cast<double>(1ULL << 53); }

 private:
  uint64_t state_;
};

struct Model {
  const char* name;
  int64_t memory_mib;
};

constexpr Model kModels[] = {
    {"NVIDIA A100-SXM4-40GB", 40960},
    {"NVIDIA H100 80GB HBM3", 81559},
    {"NVIDIA L4", 23034},
};

void FillRequest(Rng& rng, PodSpec& pod) {
  const int kind = rng.Below(100);
  if (kind < 40) {  // small fractional vGPU
    constexpr int64_t kMem[] = {1024, 2048, 4096, 8192};
    constexpr int kCores[] = {5, 10, 20, 30};
    pod.gpus = 1;
    pod.mem_mib = kMem[rng.Below(4)];
    pod.cores = kCores[rng.Below(4)];
  } else if (kind < 55) {  // a share of the card's memory
    constexpr int kPercent[] = {10, 25, 50};
    pod.gpus = 1;
    pod.mem_percent = kPercent[rng.Below(3)];
    pod.cores = 25;
  } else if (kind < 70) {  // two vGPUs, memory only (no core limit)
    pod.gpus = 2;
    pod.mem_mib = 12000;
  } else if (kind < 80) {  // a whole card: gpucores 100 by default
    pod.gpus = 1;
  } else if (kind < 88) {  // a large multi-GPU job
    pod.gpus = 4;
    pod.mem_mib = 16000;
    pod.cores = 50;
  } else if (kind < 95) {  // pinned to a model
    pod.gpus = 1;
    pod.mem_mib = 10000;
    pod.cores = 20;
    pod.annotations["nvidia.com/use-gputype"] = rng.Below(2) == 0 ? "H100" : "A100";
  } else {  // only gpumem: the webhook adds nvidia.com/gpu: 1
    pod.mem_mib = 6000;
  }
}

}  // namespace

Scenario GenerateScenario(const GeneratorOptions& o) {
  Scenario sc;
  sc.name = "generated-" + std::to_string(o.nodes) + "x" + std::to_string(o.gpus_per_node) + "-" +
            std::to_string(o.pods);
  sc.description = "generated (seed " + std::to_string(o.seed) + ")";
  sc.split_count = o.split_count;
  sc.nodes.reserve(o.nodes);
  for (int n = 0; n < o.nodes; ++n) {
    NodeSpec node;
    node.name = "node-" + std::to_string(n);
    const Model& model = kModels[n % std::size(kModels)];
    for (int g = 0; g < o.gpus_per_node; ++g) {
      node.gpus.push_back(GpuSpec{SimulatedGpuUuid(node.name, g), model.name, model.memory_mib,
                                  g < o.gpus_per_node / 2 ? 0 : 1});
    }
    sc.nodes.push_back(std::move(node));
  }
  Rng rng(o.seed);
  sc.pods.reserve(o.pods);
  for (int p = 0; p < o.pods; ++p) {
    PodSpec pod;
    pod.name = "pod-" + std::to_string(p);
    pod.arrival_s = o.arrival_interval_s * p;
    FillRequest(rng, pod);
    if (rng.Unit() < o.finite_fraction) pod.duration_s = 1.0 + rng.Below(30);
    sc.pods.push_back(std::move(pod));
  }
  sc.policies.push_back(PolicyPair{"binpack", "spread"});
  return sc;
}

std::string_view BuiltinScenarioYaml() {
  return R"(# Built-in scenario of `vgpu sim`: the same pods on the same nodes under two policies.
name: binpack-vs-spread
description: >-
  3 nodes (2x A100 40GB, 1x 4x T4) and 20 pods of fractional vGPUs; binpack fills few GPUs and
  leaves whole cards free for the late whole-card pods, spread balances load across cards.
deviceSplitCount: 10
policies:
  - {node: binpack, gpu: binpack}
  - {node: spread, gpu: spread}
nodes:
  - name: a100
    count: 2
    gpus:
      - {model: "NVIDIA A100-SXM4-40GB", memory: 40960, count: 2}
  - name: t4-0
    gpus:
      - {model: "Tesla T4", memory: 15360, count: 4}
pods:
  - {name: notebook, count: 8, arrival: 0, interval: 0.5, gpu: 1, gpumem: 6000, gpucores: 20}
  - {name: infer, count: 6, arrival: 1, interval: 0.5, gpu: 1, gpumem-percentage: 25, gpucores: 10}
  - {name: train-2gpu, count: 2, arrival: 5, gpu: 2, gpumem: 16000, gpucores: 40,
     annotations: {nvidia.com/use-gputype: A100}}
  - {name: whole-card, count: 3, arrival: 6, gpu: 1}
  - {name: huge, arrival: 7, gpu: 1, gpumem: 60000}
)";
}

}  // namespace vgpu::sim
