#include "sim/cluster/latency.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace vgpu::sim {

double LatencyRecorder::Percentile(double p) const {
  if (samples_.empty()) return 0;
  std::vector<double> sorted = samples_;
  std::sort(sorted.begin(), sorted.end());
  const double clamped = std::clamp(p, 0.0, 100.0);
  // Nearest rank: the smallest sample with at least p% of the samples at or below it.
  const auto rank =
      static_cast<size_t>(std::ceil(clamped / 100.0 * static_cast<double>(sorted.size())));
  return sorted[rank == 0 ? 0 : rank - 1];
}

double LatencyRecorder::Mean() const {
  if (samples_.empty()) return 0;
  return std::accumulate(samples_.begin(), samples_.end(), 0.0) /
         static_cast<double>(samples_.size());
}

double LatencyRecorder::Max() const {
  return samples_.empty() ? 0 : *std::max_element(samples_.begin(), samples_.end());
}

}  // namespace vgpu::sim
