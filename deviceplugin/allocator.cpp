#include "deviceplugin/allocator.h"

#include <cstdio>
#include <random>

#include "core/allocate/mps.h"
#include "core/allocate/pod_lookup.h"
#include "core/base/log.h"
#include "core/codec/annotations.h"
#include "core/codec/node_lock.h"
#include "core/codec/pod_devices.h"

namespace vgpu::deviceplugin {
namespace ann = vgpu::annotations;

std::string NewUuid4() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t hi = rng();
  uint64_t lo = rng();
  hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  char buf[37];
  (void)std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx",
                      static_cast<unsigned>(hi >> 32), static_cast<unsigned>((hi >> 16) & 0xffff),
                      static_cast<unsigned>(hi & 0xffff), static_cast<unsigned>(lo >> 48),
                      static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return buf;
}

Allocator::Allocator(ClusterApi& api, AllocatorConfig config)
    : api_(api), config_(std::move(config)) {
  if (!config_.new_cache_id) {
    config_.new_cache_id = NewUuid4;
  }
}

void Allocator::SetNodeGpus(const codec::NodeInventory& registered) {
  allocate::NodeGpuMemory gpus;
  for (const codec::DeviceInfo& d : registered) gpus[d.id] = d.devmem;
  std::lock_guard lock(mu_);
  gpus_ = std::move(gpus);
}

void Allocator::ReleaseLock(const std::string& lock_value) {
  if (lock_value.empty()) {
    return;
  }
  Status s = api_.RemoveNodeAnnotationIf(config_.node, std::string(ann::kNodeLock), lock_value);
  if (s.code() == StatusCode::kFailedPrecondition) {
    // The lock is no longer ours: a bind took it over (it had expired, or its pod was done)
    // between our read and this release. Leaving it to its new holder is the right outcome, and
    // `vgpu sim` runs hit it routinely: not a warning.
    log::Info("node lock already held by another pod, left to it",
              {{"node", config_.node}, {"ours", lock_value}});
  } else if (!s.ok()) {
    log::Warn("node lock not released", {{"node", config_.node}, {"error", s.ToString()}});
  }
}

Status Allocator::Fail(const PodRef& pod, const std::string& lock_value, bool release_lock,
                       const Status& why) {
  const std::string ref = pod.ns + "/" + pod.name;
  Status patched = api_.PatchPodAnnotations(
      pod.ns, pod.name, {{std::string(ann::kBindPhase), std::string(ann::kBindPhaseFailed)}});
  if (!patched.ok()) {
    log::Warn("could not mark pod failed", {{"pod", ref}, {"error", patched.ToString()}});
  }
  if (release_lock) {
    ReleaseLock(lock_value);
  }
  log::Error("allocate failed", {{"node", config_.node}, {"pod", ref}, {"error", why.ToString()}});
  return why.WithContext("vgpu Allocate for pod " + ref + " on node " + config_.node);
}

namespace {

std::string AnnotationOf(const nlohmann::json& obj, std::string_view key) {
  const auto& meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) {
    return {};
  }
  const auto& anns = meta->find("annotations");
  if (anns == meta->end() || !anns->is_object()) {
    return {};
  }
  const auto& v = anns->find(std::string(key));
  return (v != anns->end() && v->is_string()) ? v->get<std::string>() : std::string();
}

std::vector<allocate::GrantedDevice> ToGranted(const codec::ContainerDevices& entry) {
  std::vector<allocate::GrantedDevice> out;
  out.reserve(entry.size());
  for (const auto& d : entry) {
    out.push_back({d.uuid, d.mem_mib, d.cores});
  }
  return out;
}

}  // namespace

Result<allocate::ContainerResponse> Allocator::AnswerFor(const allocate::PodView& pod,
                                                         const allocate::ContainerView& container,
                                                         const codec::ContainerDevices& entry,
                                                         size_t replicas) {
  const auto granted = ToGranted(entry);
  Status valid = allocate::ValidateEntry(granted, replicas, gpus_, config_.node);
  if (!valid.ok()) {
    return valid.WithContext("container " + container.name);
  }
  // No more than the container's own (immutable) spec asks, whoever rewrote the annotation.
  VGPU_RETURN_IF_ERROR(
      allocate::CheckEntryAgainstSpec(granted, pod, container, config_.spec.defaults, gpus_));
  // Fail closed on the mode before anything is prepared on the host (core/allocate/mps.h).
  VGPU_RETURN_IF_ERROR(
      allocate::CheckModeGrant(pod, config_.response.operating_mode, granted, container.name));
  if (config_.prepare_host) {
    Status prepared = config_.prepare_host(pod.uid, container.name);
    if (!prepared.ok()) {
      return prepared;
    }
  }
  return allocate::BuildContainerResponse(granted, pod.uid, container, config_.new_cache_id(),
                                          config_.response);
}

std::vector<allocate::OwedAnswer> Allocator::OwedAnswers() {
  if (!config_.kubelet_answers) {
    return {};
  }
  auto answers = config_.kubelet_answers();
  if (!answers.ok()) {
    log::Warn("cannot check kubelet's answers",
              {{"node", config_.node}, {"error", answers.status().ToString()}});
    return {};
  }
  return allocate::MisdeliveredAnswers(*answers, config_.resource_name);
}

std::optional<std::vector<allocate::KubeletPod>> Allocator::KubeletPods() {
  if (!config_.kubelet_pods) {
    return std::nullopt;
  }
  auto pods = config_.kubelet_pods();
  if (!pods.ok()) {
    if (!kubelet_pods_failing_) {
      log::Warn(
          "cannot list kubelet's pods; the node lock and annotations alone pick the pod of each "
          "Allocate",
          {{"node", config_.node}, {"error", pods.status().ToString()}});
    }
    kubelet_pods_failing_ = true;
    return std::nullopt;
  }
  if (kubelet_pods_failing_) {
    log::Info("kubelet's pods readable again", {{"node", config_.node}});
  }
  kubelet_pods_failing_ = false;
  return std::move(*pods);
}

Result<std::vector<allocate::ContainerResponse>> Allocator::RepeatOwedAnswer(
    const allocate::PodView& pod, const std::string& container,
    const std::vector<std::vector<std::string>>& replicas) {
  const std::string ref = allocate::PodRef(pod);
  auto fail = [&](const std::string& why) {
    log::Error("allocate failed", {{"node", config_.node}, {"pod", ref}, {"error", why}});
    return FailedPrecondition("vgpu Allocate for pod " + ref + " on node " + config_.node +
                              ": cannot repeat the answer kubelet gave to another pod: " + why);
  };
  if (replicas.size() != 1) {
    return fail("kubelet asked for " + std::to_string(replicas.size()) +
                " containers in one call; an owed answer is for one");
  }
  auto allocated = pod.annotations.find(std::string(ann::kDevicesAllocated));
  if (allocated == pod.annotations.end()) {
    return fail("the pod has no " + std::string(ann::kDevicesAllocated) + " annotation");
  }
  auto devices = codec::DecodePodDevices(allocated->second);
  if (!devices.ok()) {
    return fail(devices.status().ToString());
  }
  for (size_t idx = 0; idx < devices->size(); ++idx) {
    auto c = allocate::ContainerForEntry(pod, idx);
    if (!c.ok() || c->name != container) {
      continue;
    }
    auto answer = AnswerFor(pod, *c, (*devices)[idx], replicas[0].size());
    if (!answer.ok()) {
      return fail(answer.status().ToString());
    }
    log::Warn("answered again",
              {{"node", config_.node},
               {"pod", ref},
               {"container", container},
               {"reason",
                "kubelet gave this container's answer to another pod (deleted while kubelet "
                "admitted it)"}});
    return std::vector<allocate::ContainerResponse>{std::move(*answer)};
  }
  return fail("no entry of " + std::string(ann::kDevicesAllocated) + " belongs to container " +
              container);
}

Result<std::vector<allocate::ContainerResponse>> Allocator::Allocate(
    const std::vector<std::vector<std::string>>& replicas) {
  std::lock_guard guard(mu_);
  const std::string& node_name = config_.node;

  auto node = api_.GetNode(node_name);
  if (!node.ok()) {
    return Unavailable("vgpu Allocate on node " + node_name +
                       ": cannot read the node from the API server: " + node.status().ToString() +
                       " (is the API server reachable, and may the plugin get nodes?)");
  }
  const std::string lock_value = AnnotationOf(*node, ann::kNodeLock);
  std::optional<allocate::PodKey> owner;
  if (!lock_value.empty()) {
    auto lock = codec::DecodeNodeLock(lock_value);
    if (lock.ok() && lock->has_owner()) {
      owner = allocate::PodKey{lock->pod_namespace, lock->pod_name};
    } else if (!lock.ok()) {
      log::Warn("ignoring malformed node lock",
                {{"node", node_name}, {"value", lock_value}, {"error", lock.status().ToString()}});
    }
  }

  // Fast path: the lock names the pod, so one GET finds it. The node's pod list is read only
  // when there is no usable owner (legacy lock, owner gone or not allocating here).
  std::vector<allocate::PodView> pods;
  std::optional<size_t> found;
  const std::vector<allocate::OwedAnswer> owed = OwedAnswers();
  // Read before the node's pods, so that a pod deleted in between reads as deleted.
  const std::optional<std::vector<allocate::KubeletPod>> kubelet = KubeletPods();
  if (owner && owed.empty() && (!kubelet || allocate::KubeletListsUnserved(*kubelet, *owner))) {
    auto owner_pod = api_.GetPod(owner->ns, owner->name);
    if (owner_pod.ok()) {
      auto view = allocate::PodViewFromJson(*owner_pod, config_.spec.names);
      if (view.ok()) {
        pods.push_back(std::move(*view));
        auto hit = allocate::FindAllocatingPod(node_name, owner, pods);
        if (hit.ok()) {
          found = *hit;
        }
      }
    } else if (owner_pod.status().code() != StatusCode::kNotFound) {
      ReleaseLock(lock_value);
      return Unavailable("vgpu Allocate on node " + node_name + ": cannot read pod " + owner->ns +
                         "/" + owner->name + ": " + owner_pod.status().ToString());
    }
  }
  if (!found) {
    auto pods_json = api_.ListPodsOnNode(node_name);
    if (!pods_json.ok()) {
      ReleaseLock(lock_value);
      return Unavailable("vgpu Allocate on node " + node_name +
                         ": cannot list the node's pods: " + pods_json.status().ToString());
    }
    pods.clear();
    pods.reserve(pods_json->size());
    for (const auto& p : *pods_json) {
      auto view = allocate::PodViewFromJson(p, config_.spec.names);
      if (view.ok()) {
        pods.push_back(std::move(*view));
      }
    }
    auto hit = kubelet ? allocate::FindAdmittedTarget(node_name, owner, pods, owed, *kubelet)
                       : allocate::FindAllocationTarget(node_name, owner, pods, owed);
    if (!hit.ok()) {
      // A deleted pod's call (FailedPrecondition) leaves the lock to the pod that holds it.
      if (hit.status().code() == StatusCode::kNotFound) {
        ReleaseLock(lock_value);
      }
      log::Error("allocate failed", {{"node", node_name}, {"error", hit.status().ToString()}});
      return hit.status().WithContext("vgpu Allocate on node " + node_name);
    }
    if (hit->owed_container) {
      return RepeatOwedAnswer(pods[hit->pod], *hit->owed_container, replicas);
    }
    found = hit->pod;
  }
  const allocate::PodView& pod = pods[*found];
  const PodRef ref{pod.ns, pod.name};
  // Release the lock only when it belongs to this pod (or is HAMi's legacy ownerless form):
  // another owner's lock guards that pod's own bind.
  const bool own_lock = !owner || (owner->ns == pod.ns && owner->name == pod.name);

  auto to_allocate = pod.annotations.find(std::string(ann::kDevicesToAllocate));
  if (to_allocate == pod.annotations.end()) {
    return Fail(ref, lock_value, own_lock,
                InvalidArgument("the pod has no " + std::string(ann::kDevicesToAllocate) +
                                " annotation; the scheduler did not assign GPUs to it"));
  }
  auto devices = codec::DecodePodDevices(to_allocate->second);
  if (!devices.ok()) {
    return Fail(ref, lock_value, own_lock,
                devices.status().WithContext("annotation " + std::string(ann::kDevicesToAllocate) +
                                             " is malformed"));
  }
  codec::PodDevices remaining = std::move(*devices);

  std::vector<allocate::ContainerResponse> responses;
  for (size_t k = 0; k < replicas.size(); ++k) {
    int index = codec::FirstNonEmptyEntry(remaining);
    if (index < 0) {
      return Fail(
          ref, lock_value, own_lock,
          FailedPrecondition("kubelet asked for GPUs for " + std::to_string(replicas.size()) +
                             " container(s) but no device list entry is left for "
                             "container request " +
                             std::to_string(k) + " (" + std::string(ann::kDevicesToAllocate) +
                             " already consumed)"));
    }
    const auto idx = static_cast<size_t>(index);
    auto container = allocate::ContainerForEntry(pod, idx);
    if (!container.ok()) {
      return Fail(ref, lock_value, own_lock, container.status());
    }
    auto answer = AnswerFor(pod, *container, remaining[idx], replicas[k].size());
    if (!answer.ok()) {
      return Fail(ref, lock_value, own_lock, answer.status());
    }
    responses.push_back(std::move(*answer));
    remaining[idx].clear();
  }

  const bool done = codec::FirstNonEmptyEntry(remaining) < 0;
  AnnotationPatch patch{{std::string(ann::kDevicesToAllocate), codec::EncodePodDevices(remaining)}};
  if (done) {
    patch[std::string(ann::kBindPhase)] = std::string(ann::kBindPhaseSuccess);
  }
  Status written = api_.PatchPodAnnotations(pod.ns, pod.name, patch);
  if (!written.ok()) {
    return Fail(ref, lock_value, own_lock,
                written.WithContext("writing back " + std::string(ann::kDevicesToAllocate)));
  }
  if (done && own_lock) {
    ReleaseLock(lock_value);
  }
  log::Info("allocated", {{"node", node_name},
                          {"pod", pod.ns + "/" + pod.name},
                          {"containers", responses.size()},
                          {"done", done}});
  return responses;
}

}  // namespace vgpu::deviceplugin
