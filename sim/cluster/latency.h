#pragma once

// Latency samples of one kind of call (filter, prioritize, bind, whole pod) and their percentiles.

#include <cstddef>
#include <string>
#include <vector>

namespace vgpu::sim {

class LatencyRecorder {
 public:
  void Add(double millis) { samples_.push_back(millis); }
  size_t count() const { return samples_.size(); }

  // Nearest-rank percentile (p in 0..100); 0 when there are no samples.
  double Percentile(double p) const;
  double Mean() const;
  double Max() const;

 private:
  std::vector<double> samples_;
};

}  // namespace vgpu::sim
