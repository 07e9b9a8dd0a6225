#include "sim/cluster/scheduling_queue.h"

#include <algorithm>

namespace vgpu::sim {

void SchedulingQueue::Add(size_t pod) {
  unschedulable_.erase(pod);
  if (queued_.insert(pod).second) active_.push_back(pod);
}

std::optional<size_t> SchedulingQueue::Pop() {
  if (active_.empty()) return std::nullopt;
  const size_t pod = active_.front();
  active_.pop_front();
  queued_.erase(pod);
  return pod;
}

void SchedulingQueue::MarkUnschedulable(size_t pod, std::string reason) {
  unschedulable_[pod] = std::move(reason);
}

size_t SchedulingQueue::MoveAllToActive() {
  const size_t n = unschedulable_.size();
  for (const auto& [pod, reason] : unschedulable_) {
    if (queued_.insert(pod).second) active_.push_back(pod);
  }
  unschedulable_.clear();
  return n;
}

void SchedulingQueue::MoveToFront(size_t pod) {
  unschedulable_.erase(pod);
  if (!queued_.insert(pod).second) {
    active_.erase(std::remove(active_.begin(), active_.end(), pod), active_.end());
  }
  active_.push_front(pod);
}

void SchedulingQueue::Forget(size_t pod) {
  unschedulable_.erase(pod);
  if (queued_.erase(pod) > 0) {
    active_.erase(std::remove(active_.begin(), active_.end(), pod), active_.end());
  }
}

}  // namespace vgpu::sim
