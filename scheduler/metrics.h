#pragma once

// The scheduler's Prometheus metrics (core/prom writes the text format): HAMi v2.10's device,
// node, quota and container gauges with its names, labels (zone="vGPU" on all but
// hami_build_info) and scales, its pre-v2.9 names behind a flag; our own filter/prioritize/bind
// latency histograms and counters (vgpu_scheduler_*).

#include <array>
#include <atomic>
#include <chrono>
#include <string>

#include "core/prom/exposition.h"
#include "core/sched/reasons.h"

namespace vgpu::scheduler {

class ClusterModel;

class LatencyHistogram {
 public:
  static constexpr std::array<double, 14> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30};
  void Observe(std::chrono::nanoseconds d);
  // The histogram as a family of one series, in seconds.
  prom::MetricFamily Family(std::string name, std::string help) const;
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<uint64_t>, kBounds.size()> buckets_{};  // non-cumulative
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_ns_{0};
};

class SchedulerMetrics {
 public:
  LatencyHistogram filter, prioritize, bind, preempt;
  std::atomic<uint64_t> preempt_victims{0};  // victims named in preempt answers (all nodes)
  std::atomic<uint64_t> bind_failures{0};
  std::atomic<uint64_t> lock_takeovers{0};
  std::atomic<uint64_t> webhook_allowed{0};
  std::atomic<uint64_t> webhook_denied{0};
  std::atomic<uint64_t> bad_requests{0};

  void Reject(sched::Reason r) {
    rejections_[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t rejections(sched::Reason r) const {
    return rejections_[static_cast<size_t>(r)].load(std::memory_order_relaxed);
  }

  // The whole /metrics page. `legacy_too` (--legacy-metrics): HAMi's pre-v2.9 names and label
  // names as well as the hami_* families, as HAMi writes both under that flag.
  std::string Render(const ClusterModel& model, bool legacy_too) const;

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(sched::Reason::kCount)> rejections_{};
};

}  // namespace vgpu::scheduler
