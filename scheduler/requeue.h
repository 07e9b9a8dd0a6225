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
// A pod is nudged at most once per freed-capacity event and at most every `min_interval`.

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

// The thread that watches the model's capacity generation and patches the due pods.
class Requeuer {
 public:
  struct Options {
    std::chrono::milliseconds poll{200};
  };
  // `generation` reads the model's capacity generation; `api` must outlive the requeuer.
  Requeuer(ClusterApi& api, std::function<uint64_t()> generation, Options options);
  ~Requeuer() { Stop(); }
  Requeuer(const Requeuer&) = delete;
  Requeuer& operator=(const Requeuer&) = delete;

  void TurnedAway(const std::string& uid, const std::string& ns, const std::string& name);
  void Forget(const std::string& uid);
  void Stop();
  uint64_t nudged() const;

 private:
  void Run();

  ClusterApi& api_;
  std::function<uint64_t()> generation_;
  Options options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  TurnedAwayPods pods_;
  uint64_t nudged_ = 0;
  std::thread thread_;
};

}  // namespace vgpu::scheduler
