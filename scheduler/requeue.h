#pragma once

// Sends pods the extender turned away for lack of GPU capacity back to kube-scheduler's active
// queue once capacity frees up in the extender's model.
//
// Why: kube-scheduler moves its unschedulable pods back to the active queue when it sees a pod
// deleted, but the extender's own watch may see that deletion later. A pod filtered in between is
// turned away on GPUs kube-scheduler already knows to be free, and then waits in the unschedulable
// queue for the next cluster event, or for its 60-s flush (seen in e2e: a pod sat 60 s after the
// pods before it were deleted). So every pod the filter rejects on every node is remembered with
// the model's capacity generation at that moment; when the generation moves on (a pod holding
// GPUs went away, a reservation was dropped, a node or a quota changed), the pod's annotation
// `vgpu.io/capacity-freed-at` is set, and kube-scheduler re-queues a pending pod that was updated.
// A pod is nudged at most once per freed-capacity event (it is remembered again if turned away
// again).
//
// The same nudge serves pods whose bind the extender's bind gate refused (leader election). When
// the leader dies, the survivor's kube-scheduler may win its Lease a moment before the
// vgpu-scheduler beside it wins vgpu's Lease (or has re-read nodes and pods); the binds it sends
// in that window are refused, and kube-scheduler parks those pods in its unschedulable queue for
// up to 60 s, although this replica is about to bind. So a refused pod is remembered, and once
// the gate lets binds through it is nudged (if it is still there and unbound).
//
// And pods whose bind gave up waiting for the node's lock (NodeLocker: another pod's Allocate had
// not finished): kube-scheduler parks them in the same unschedulable queue, and nothing it watches
// changes when the lock is released (an annotation of the node). Under churn, with binds queued
// on one node's lock, such pods waited out the 60-s flush (seen in e2e: a pod bound 70 s after
// its second refusal, with the node's GPUs free). They are nudged once settled, to try again.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/codec/annotations.h"
#include "scheduler/cluster_api.h"

namespace vgpu::scheduler {

// A literal in annotations.h, so data() is NUL-terminated.
inline constexpr const char* kCapacityFreedAnnotation = annotations::kCapacityFreedAt.data();

// The bookkeeping, without threads or I/O (tests/scheduler/requeue_test.cpp).
class TurnedAwayPods {
 public:
  using Clock = std::chrono::steady_clock;
  struct Target {
    std::string uid;
    std::string ns;
    std::string name;
  };

  explicit TurnedAwayPods(size_t max_pods = 4096,
                          std::chrono::seconds forget_after = std::chrono::minutes(10))
      : max_pods_(max_pods), forget_after_(forget_after) {}

  // The filter found no node for the pod while the model's capacity generation was `generation`.
  void TurnedAway(const std::string& uid, const std::string& ns, const std::string& name,
                  uint64_t generation, Clock::time_point now);
  // The pod was bound (or deleted): no nudge.
  void Forget(const std::string& uid);
  // The pods to nudge now that the generation is `generation`: those turned away at an older one.
  // They are forgotten (a pod that is turned away again is remembered again); pods remembered
  // longer than `forget_after` are dropped without a nudge.
  std::vector<Target> Due(uint64_t generation, Clock::time_point now);
  size_t size() const { return pods_.size(); }

 private:
  struct Entry {
    std::string ns;
    std::string name;
    uint64_t generation = 0;
    Clock::time_point since;
  };
  size_t max_pods_;
  std::chrono::seconds forget_after_;
  std::map<std::string, Entry> pods_;  // by uid
};

// Pods whose bind the extender's bind gate refused: the bookkeeping, without threads or I/O.
class GateRefusedPods {
 public:
  using Clock = TurnedAwayPods::Clock;
  using Target = TurnedAwayPods::Target;

  explicit GateRefusedPods(size_t max_pods = 4096,
                           std::chrono::seconds forget_after = std::chrono::minutes(10))
      : max_pods_(max_pods), forget_after_(forget_after) {}

  // The gate refused the pod's bind at `now` (a later refusal moves the time on).
  void Refused(const std::string& uid, const std::string& ns, const std::string& name,
               Clock::time_point now);
  // The pod was bound: no nudge.
  void Forget(const std::string& uid);
  // The pods refused at least `settle` before `now`, forgotten as they are returned (a pod that
  // is refused again is remembered again); pods refused longer than `forget_after` ago are
  // dropped without a nudge (a gate that stays shut: kube-scheduler's own retries remain).
  std::vector<Target> Due(Clock::time_point now, Clock::duration settle);
  size_t size() const { return pods_.size(); }

 private:
  struct Entry {
    std::string ns;
    std::string name;
    Clock::time_point at;
  };
  size_t max_pods_;
  std::chrono::seconds forget_after_;
  std::map<std::string, Entry> pods_;  // by uid
};

// The thread that watches the model's capacity generation and the bind gate, and patches the due
// pods.
class Requeuer {
 public:
  struct Options {
    std::chrono::milliseconds poll{200};
    // Whether the extender's bind gate lets binds through now; unset: always. A pull, not an
    // event, because the gate opens on a conjunction (leader, the term's re-read done) that no
    // single callback reports. Asked once a poll, off the requeuer's mutex, and only while pods
    // refused by the gate are remembered.
    std::function<bool()> gate_open = nullptr;
    // A refused pod is nudged no sooner than this after its refusal: kube-scheduler ignores an
    // annotation-only update of a pod it still assumes, which it does until the refusal has
    // reached it, and a nudge lost that way leaves the pod waiting for the 60-s flush.
    std::chrono::milliseconds gate_settle{500};
  };
  // `generation` reads the model's capacity generation; `api` must outlive the requeuer.
  Requeuer(ClusterApi& api, std::function<uint64_t()> generation, Options options);
  ~Requeuer() { Stop(); }
  Requeuer(const Requeuer&) = delete;
  Requeuer& operator=(const Requeuer&) = delete;

  void TurnedAway(const std::string& uid, const std::string& ns, const std::string& name);
  // The bind gate refused the pod's bind: nudge it at the first poll that finds the gate open
  // (and `gate_settle` after the refusal), unless it was bound or deleted meanwhile.
  void RefusedByGate(const std::string& uid, const std::string& ns, const std::string& name);
  // The pod's bind gave up waiting for its node's lock: nudge it `gate_settle` after the refusal,
  // unless it was bound or deleted meanwhile.
  void RefusedByLock(const std::string& uid, const std::string& ns, const std::string& name);
  // The pod was bound: no nudge for any reason.
  void Forget(const std::string& uid);
  void Stop();
  // Pods annotated so far, for any reason.
  uint64_t nudged() const;

 private:
  void Run();
  // Whether `t` is still the same pod, unbound and not being deleted (a failed read: no).
  bool StillPending(const TurnedAwayPods::Target& t);

  ClusterApi& api_;
  std::function<uint64_t()> generation_;
  Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  TurnedAwayPods pods_;
  GateRefusedPods refused_;
  GateRefusedPods lock_refused_;  // the same bookkeeping; due without asking the gate
  uint64_t nudged_ = 0;
  std::thread thread_;
};

}  // namespace vgpu::scheduler
