#pragma once

// Reads what the scheduler needs from Node and Pod objects (Kubernetes JSON): the node's GPU
// inventory, cordons, pair scores, handshake and lock; the pod's placement and phase.
// Malformed annotations give an error that names the annotation; the caller keeps going.

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/codec/node_lock.h"
#include "core/sched/types.h"

namespace vgpu::sched {

struct NodeState {
  std::string name;
  std::string resource_version;
  NodeView view;                              // usage left empty; the model fills it
  std::string inventory_error;                // non-empty: the node cannot take vGPU pods
  std::optional<codec::Handshake> handshake;  // absent or unreadable: treated as alive
  std::optional<std::string> lock_value;      // raw hami.io/mutex.lock
};

// Never fails: problems end up in inventory_error (inventory) or are ignored with the
// annotation's own meaning lost (cordon list, pair scores), as HAMi does.
NodeState ReadNode(const nlohmann::json& node);

// Alive unless the device plugin left a handshake request unanswered for longer than `timeout`
// or the scheduler already marked the node's devices deleted (HAMi v2.8+ semantics).
bool NodeAlive(const NodeState& node, std::chrono::system_clock::time_point now,
               std::chrono::seconds timeout);

Result<PairScores> ParsePairScores(std::string_view text);

struct PodState {
  std::string uid;
  std::string ns;
  std::string name;
  std::string node;        // spec.nodeName, else hami.io/vgpu-node
  std::string bind_phase;  // hami.io/bind-phase
  bool terminal = false;   // Succeeded / Failed: its containers have stopped
  // deletionTimestamp set: its containers may run for the grace period, and kubelet holds its
  // devices until they stop, so its GPUs count until the pod is gone (as kube-scheduler counts
  // a terminating pod's resources). Freeing them earlier placed pods that kubelet then refused
  // with UnexpectedAdmissionError (e2e churn).
  bool deleting = false;
  std::optional<PodAllocation> allocation;  // hami.io/vgpu-devices-allocated
  std::string allocation_error;
  // What preemption weighs (core/sched/preemption.h): spec.priority (0 when unset, as
  // kube-scheduler reads it), status.startTime else creationTimestamp, metadata.labels.
  int32_t priority = 0;
  std::string start_time;
  std::string nominated_node;  // status.nominatedNodeName: where kube-scheduler preempted for it
  std::map<std::string, std::string> labels;

  // Whether its GPUs count as used: placed on a node, not terminal, not a failed bind that
  // never reached a node.
  bool HoldsDevices() const;
};

PodState ReadPod(const nlohmann::json& pod);

// metadata.annotations[key] of a Kubernetes object, when it is a string.
std::optional<std::string> ObjectAnnotation(const nlohmann::json& obj, std::string_view key);

// The hami.io/vgpu-devices-allocated / -to-allocate value of an allocation (vendor NVIDIA).
std::string EncodeAllocation(const PodAllocation& alloc);

}  // namespace vgpu::sched
