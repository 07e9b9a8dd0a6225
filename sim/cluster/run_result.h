#pragma once

// What one simulation run (one scenario under one policy pair) produced.

#include <string>
#include <vector>

#include "sim/cluster/invariants.h"
#include "sim/cluster/latency.h"
#include "sim/cluster/scenario.h"
#include "sim/cluster/topology_stats.h"

namespace vgpu::sim {

struct PodPlacement {
  std::string ns;
  std::string name;
  std::string node;
  std::vector<AllocatedVgpu> devices;
  double placed_at_s = 0;  // virtual time
  bool completed = false;  // ran its duration and was deleted
  bool running = false;    // the simulated kubelet got its Allocate answer
  bool preempted = false;  // evicted for a pod of higher priority (preempt verb)
};

struct PodRejection {
  std::string ns;
  std::string name;
  std::string reason;   // the webhook's denial, or the last filter/bind reasons
  bool denied = false;  // by admission (never created)
};

struct RunResult {
  std::string scenario;
  PolicyPair policy;
  int pods_total = 0;
  int pods_placed = 0;     // placed at some point (includes completed ones)
  int pods_completed = 0;  // ran their duration and left
  int pods_pending = 0;    // still unschedulable at the end
  int pods_denied = 0;     // refused by the webhook
  int binds_refused = 0;   // binds the extender refused (the pod went back to the queue)
  int preemptions = 0;     // pods that evicted others to make room
  int pods_preempted = 0;  // pods evicted for them
  int scheduling_attempts = 0;
  int allocate_failures = 0;             // kubelet Allocate errors
  std::vector<PodPlacement> placements;  // in placement order
  std::vector<PodRejection> rejections;
  std::vector<GpuUsage> gpu_usage;  // end state
  TopologyStats topology;           // every placement, completed pods included
  InvariantReport invariants;
  LatencyRecorder admit_ms, filter_ms, prioritize_ms, bind_ms, schedule_ms;  // schedule = f+p+b
  // PostFilter of a pod that has pods of lower priority to evict: the dry run, /preempt, the
  // evictions and the wait until the extender sees the victims gone.
  LatencyRecorder preempt_ms;
  double wall_s = 0;
  double virtual_s = 0;
  // HTTP requests the simulated API server answered while pods were scheduled (the extender's
  // and the device plugins' reads, writes and watches): the round trips a real cluster pays.
  int64_t api_requests = 0;

  double pods_per_s() const { return wall_s > 0 ? pods_placed / wall_s : 0; }
};

}  // namespace vgpu::sim
