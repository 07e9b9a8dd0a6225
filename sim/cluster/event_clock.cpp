#include "sim/cluster/event_clock.h"

#include <algorithm>

namespace vgpu::sim {

void EventClock::Add(double time_s, SimEventKind kind, size_t pod) {
  // An event can never be in the past: time only moves forward.
  events_.push(SimEvent{std::max(time_s, now_), kind, pod, next_seq_++});
}

std::vector<SimEvent> EventClock::PopNextBatch() {
  std::vector<SimEvent> batch;
  if (events_.empty()) return batch;
  now_ = events_.top().time_s;
  while (!events_.empty() && events_.top().time_s == now_) {
    batch.push_back(events_.top());
    events_.pop();
  }
  return batch;
}

}  // namespace vgpu::sim
