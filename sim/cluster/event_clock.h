#pragma once

// Virtual time of a simulation run: pod arrivals and departures ordered by their virtual time
// (ties: in the order they were added), so a run does not wait out the scenario's seconds.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace vgpu::sim {

// kCordon / kUncordon: an entry of the scenario's cordons comes into / goes out of force.
enum class SimEventKind { kArrival, kDeparture, kCordon, kUncordon };

struct SimEvent {
  double time_s = 0;
  SimEventKind kind = SimEventKind::kArrival;
  size_t pod = 0;  // index into the scenario's pods (its cordons for kCordon / kUncordon)
  uint64_t seq = 0;
};

class EventClock {
 public:
  void Add(double time_s, SimEventKind kind, size_t pod);
  bool empty() const { return events_.empty(); }
  size_t size() const { return events_.size(); }
  double now() const { return now_; }

  // Removes and returns every event at the earliest pending time, advancing now() to it.
  std::vector<SimEvent> PopNextBatch();

 private:
  struct Later {
    bool operator()(const SimEvent& a, const SimEvent& b) const {
      return a.time_s != b.time_s ? a.time_s > b.time_s : a.seq > b.seq;
    }
  };
  std::priority_queue<SimEvent, std::vector<SimEvent>, Later> events_;
  uint64_t next_seq_ = 0;
  double now_ = 0;
};

}  // namespace vgpu::sim
