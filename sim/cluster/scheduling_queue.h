#pragma once

// kube-scheduler's queues, reduced to what the simulation needs: pods waiting for a scheduling
// attempt (FIFO) and pods found unschedulable, kept with their reason until something in the
// cluster changes (a pod leaves), when they all get another attempt.

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>

namespace vgpu::sim {

class SchedulingQueue {
 public:
  // A pod arrives (or is retried): it is attempted after those already waiting.
  void Add(size_t pod);
  std::optional<size_t> Pop();

  // The attempt failed; the pod waits for a cluster change. Replaces an earlier reason.
  void MarkUnschedulable(size_t pod, std::string reason);
  // Capacity was freed: every unschedulable pod goes back to the active queue. Returns how many.
  size_t MoveAllToActive();
  // The pod is attempted next, before pods that waited longer: a preemptor whose victims are
  // gone (kube-scheduler's active queue orders by priority, so it comes before the lower-priority
  // pods that waited with it).
  void MoveToFront(size_t pod);
  // The pod left the cluster while waiting.
  void Forget(size_t pod);

  size_t active() const { return active_.size(); }
  size_t unschedulable() const { return unschedulable_.size(); }
  const std::map<size_t, std::string>& unschedulable_pods() const { return unschedulable_; }

 private:
  std::deque<size_t> active_;
  std::unordered_set<size_t> queued_;            // members of active_, for O(1) duplicate checks
  std::map<size_t, std::string> unschedulable_;  // ordered: retries keep arrival order
};

}  // namespace vgpu::sim
