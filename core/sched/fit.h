#pragma once

// Does a pod fit on a node, and on which GPUs? Pure and O(containers x GPUs x log GPUs).

#include <array>
#include <map>
#include <optional>
#include <string>

#include "core/sched/reasons.h"
#include "core/sched/types.h"

namespace vgpu::sched {

// Memory one vGPU of `req` takes on `gpu` (resolves gpumem-percentage).
int64_t MemoryNeeded(const ContainerRequest& req, const GpuDevice& gpu);

// Why `gpu` (with `used` already taken) cannot host one vGPU of `req`; nullopt when it can.
std::optional<Reason> CheckGpu(const GpuDevice& gpu, const DeviceUsage& used, bool cordoned,
                               const ContainerRequest& req, const PodRequest& pod);

// How full a GPU is, 0..1, weighted by the pod's scoring weights.
double GpuFullness(const GpuDevice& gpu, const DeviceUsage& used, const ScoringWeights& w);

struct NodeFit {
  bool ok = false;
  PodAllocation allocation;  // valid when ok
  Reason reason = Reason::kNodeInsufficientDevice;
  std::string message;  // for FailedNodes: reason word first, then the per-GPU tally
  std::array<int, static_cast<size_t>(Reason::kCount)> gpu_rejections{};
};

// Places every container of `pod` on `node`'s GPUs following the pod's GPU policy,
// NUMA binding and selectors. Init containers are placed against the node's usage alone
// (they run before the app containers); app containers accumulate.
NodeFit FitPod(const NodeView& node, const PodRequest& pod);

// Per-GPU usage of a placed pod: for each GPU max(init peak, sum of app containers), as HAMi
// counts.
std::map<std::string, DeviceUsage> PodFootprint(const PodAllocation& alloc);

// Node score 0..10 for kube-scheduler's prioritize: how full the node is after placing
// `alloc` (binpack: fuller scores higher; spread: emptier scores higher).
int NodeScore(const NodeView& node, const PodAllocation& alloc, NodePolicy policy,
              const ScoringWeights& w);

}  // namespace vgpu::sched
