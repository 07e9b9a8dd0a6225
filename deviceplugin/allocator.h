#pragma once

// Allocate's I/O around the pure decisions of core/allocate: read the node lock and the node's
// pods, pick the pod, consume its next device list entries, write the list back, finish the
// bind (bind-phase, lock). Every failure after the pod is known marks it `bind-phase=failed`
// and releases the lock, so the scheduler can retry elsewhere instead of waiting on a timer.

#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/allocate/container_response.h"
#include "core/allocate/misdelivered.h"
#include "core/allocate/pod_lookup.h"
#include "core/allocate/spec_check.h"
#include "core/codec/node_inventory.h"
#include "core/codec/pod_devices.h"
#include "deviceplugin/cluster_api.h"

namespace vgpu::deviceplugin {

struct AllocatorConfig {
  std::string node;
  allocate::ResponseSettings response;
  // How the scheduler reads a container's ask (device-config.yaml's names and defaults): what
  // Allocate hands a container is checked against its spec (core/allocate/spec_check.h).
  allocate::SpecRules spec;
  // Creates the host directory of a container's shared region; may be empty (nothing to do).
  std::function<Status(const std::string& pod_uid, const std::string& container)> prepare_host;
  // Source of the per-container cache ids (uuid4); replaceable for tests.
  std::function<std::string()> new_cache_id;
  // The resource kubelet allocates (`nvidia.com/gpu`), and the answers kubelet holds
  // (deviceplugin/kubelet_answers.h); empty: answers given to the wrong pod are not repaired.
  std::string resource_name = "nvidia.com/gpu";
  std::function<Result<std::vector<allocate::KubeletAnswer>>()> kubelet_answers;
  // The pods kubelet knows, from its pod-resources API (deviceplugin/kubelet_pods.h), to tell
  // which pod an Allocate call is for (core/allocate/pod_lookup.h, FindAdmittedTarget); empty or
  // failing: the node lock and the annotations alone decide.
  std::function<Result<std::vector<allocate::KubeletPod>>()> kubelet_pods;
};

class Allocator {
 public:
  Allocator(ClusterApi& api, AllocatorConfig config);

  // The GPUs this node registers for the scheduler (its inventory: UUIDs, memory after scaling);
  // entries naming any other GPU, or a memory limit beyond the GPU's, are rejected.
  void SetNodeGpus(const codec::NodeInventory& registered);

  // One answer per container request; `replicas[k]` holds the replica IDs kubelet chose for
  // container request k (only their number matters: the scheduler picked the GPUs).
  Result<std::vector<allocate::ContainerResponse>> Allocate(
      const std::vector<std::vector<std::string>>& replicas);

 private:
  struct PodRef {
    std::string ns, name;
  };
  // Marks the pod failed and releases the lock (both best effort), returns `why` with context.
  Status Fail(const PodRef& pod, const std::string& lock_value, bool release_lock,
              const Status& why);
  void ReleaseLock(const std::string& lock_value);
  // One container's answer from its device list entry: the entry checked against the replicas
  // kubelet asked for and this node's GPUs, the container's host directory created.
  Result<allocate::ContainerResponse> AnswerFor(const allocate::PodView& pod,
                                                const allocate::ContainerView& container,
                                                const codec::ContainerDevices& entry,
                                                size_t replicas);
  // Answers kubelet gave to another pod than the one they were written for; none when unknown.
  std::vector<allocate::OwedAnswer> OwedAnswers();
  // kubelet's pods; nullopt when unknown (no source, or it failed: logged when that changes).
  std::optional<std::vector<allocate::KubeletPod>> KubeletPods();
  // The owed container's answer again, from `hami.io/vgpu-devices-allocated`.
  Result<std::vector<allocate::ContainerResponse>> RepeatOwedAnswer(
      const allocate::PodView& pod, const std::string& container,
      const std::vector<std::vector<std::string>>& replicas);

  ClusterApi& api_;
  AllocatorConfig config_;
  std::mutex mu_;  // one Allocate at a time: each is a read-modify-write of the pod's annotations
  allocate::NodeGpuMemory gpus_;
  bool kubelet_pods_failing_ = false;  // the last KubeletPods() call failed (guarded by mu_)
};

// A random RFC 4122 version-4 UUID.
std::string NewUuid4();

}  // namespace vgpu::deviceplugin
