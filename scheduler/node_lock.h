#pragma once

// HAMi's node lock (hami.io/mutex.lock = "<RFC3339>,<ns>,<pod>"): the scheduler takes it in
// bind, the device plugin releases it after Allocate, so that stock HAMi device plugins find
// the pod being allocated. Taken with a JSON patch guarded by the node's resourceVersion.
// A held lock is waited for (bounded); a lock whose owner is gone, terminal or done
// (bind-phase failed/success), or older than `stale_after`, is taken over at once.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/base/status.h"
#include "scheduler/cluster_api.h"

namespace vgpu::scheduler {

struct NodeLockOptions {
  // How long a bind waits for a held lock: well inside kube-scheduler's extender httpTimeout
  // (30 s in our configs), so that the bind's writes finish before kube-scheduler gives up on it
  // and schedules the pod again.
  std::chrono::milliseconds wait_timeout{20000};
  std::chrono::milliseconds poll_min{5};
  std::chrono::milliseconds poll_max{200};
  // A lock older than this is taken over even when its owner still says "allocating": kubelet
  // calls Allocate seconds after binding, so an older lock means the Allocate is not coming
  // (e.g. a kubelet restarted before its device plugin re-registered). HAMi waits 5 minutes.
  std::chrono::seconds stale_after{60};
};

class NodeLocker {
 public:
  using Clock = std::chrono::system_clock;
  NodeLocker(
      ClusterApi& api, NodeLockOptions options,
      std::function<Clock::time_point()> now = [] { return Clock::now(); })
      : api_(api), options_(options), now_(std::move(now)) {}

  // Optional view of the cluster as the watches see it: says whether `node`'s lock is held by a
  // pod that is still allocating. While it is, waiting costs no API calls; the API is asked
  // only when the lock looks free or stale.
  using HeldByLiveOwner = std::function<bool(const std::string& node, const std::string& ns,
                                             const std::string& pod, std::string* holder)>;
  void set_held_by_live_owner(HeldByLiveOwner fn) { held_ = std::move(fn); }
  // Optional, from the same view: the resourceVersion at which `node` was last seen with no
  // lock (nullopt: locked, or unknown). The first try patches on that version without reading
  // the node; a view that has fallen behind costs one refused patch, then the node is read.
  using UnlockedAt = std::function<std::optional<std::string>(const std::string& node)>;
  void set_unlocked_at(UnlockedAt fn) { unlocked_at_ = std::move(fn); }

  // Takes the lock on `node` for pod ns/name. DeadlineExceeded (naming the holder) when the
  // wait runs out; other errors when the API fails. `takeovers` counts stale locks replaced.
  Status Acquire(const std::string& node, const std::string& ns, const std::string& pod,
                 int* takeovers = nullptr);
  // Removes the lock if ns/pod still holds it (a failed bind); anything else is left alone.
  Status Release(const std::string& node, const std::string& ns, const std::string& pod);

 private:
  // Whether the holder `ns/pod` no longer needs the lock.
  bool OwnerDone(const std::string& ns, const std::string& pod);

  ClusterApi& api_;
  NodeLockOptions options_;
  std::function<Clock::time_point()> now_;
  HeldByLiveOwner held_;
  UnlockedAt unlocked_at_;
};

}  // namespace vgpu::scheduler
