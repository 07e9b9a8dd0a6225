#include "scheduler/metrics.h"

#include "core/prom/exposition.h"
#include "scheduler/cluster_model.h"

namespace vgpu::scheduler {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

void LatencyHistogram::Observe(std::chrono::nanoseconds d) {
  const double s = std::chrono::duration<double>(d).count();
  for (size_t i = 0; i < kBounds.size(); ++i) {
    if (s <= kBounds[i]) {
      buckets_[i].fetch_add(1, std::memory_order_relaxed);
      break;
    }
  }
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(d.count()), std::memory_order_relaxed);
}

void LatencyHistogram::Render(const std::string& name, const std::string& help,
                              std::string& out) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    out += name + "_bucket{le=\"" + prom::FormatValue(kBounds[i]) + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count()) + "\n";
  out += name + "_sum " +
         prom::FormatValue(static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9) +
         "\n";
  out += name + "_count " + std::to_string(count()) + "\n";
}

std::string SchedulerMetrics::Render(const ClusterModel& model, bool legacy) const {
  const auto n = [legacy](const char* modern, const char* old) {
    return std::string(legacy ? old : modern);
  };
  using prom::MetricFamily;
  MetricFamily mem_limit{n("hami_gpu_memory_limit_bytes", "GPUDeviceMemoryLimit"),
                         "Device memory of the GPU in bytes"};
  MetricFamily core_limit{n("hami_gpu_core_limit_ratio", "GPUDeviceCoreLimit"),
                          "Compute of the GPU (1 = the whole card; legacy: percent)"};
  MetricFamily mem_alloc{n("hami_gpu_memory_allocated_bytes", "GPUDeviceMemoryAllocated"),
                         "Device memory allocated to vGPUs on the GPU in bytes"};
  MetricFamily core_alloc{n("hami_gpu_core_allocated_ratio", "GPUDeviceCoreAllocated"),
                          "Compute allocated to vGPUs on the GPU (legacy: percent)"};
  MetricFamily shared{n("hami_gpu_shared_count", "GPUDeviceSharedNum"),
                      "Number of vGPUs placed on the GPU"};
  MetricFamily vmem{n("hami_vgpu_memory_allocated_bytes", "vGPUMemoryAllocated"),
                    "Device memory allocated to one container's vGPU in bytes"};
  MetricFamily vcore{n("hami_vgpu_core_allocated_ratio", "vGPUCoreAllocated"),
                     "Compute allocated to one container's vGPU (legacy: percent)"};
  const double core_div = legacy ? 1.0 : 100.0;

  model.ForEachNode([&](const sched::NodeState& node) {
    const sched::NodeView& v = node.view;
    for (size_t i = 0; i < v.gpus.size(); ++i) {
      const sched::GpuDevice& g = v.gpus[i];
      const sched::DeviceUsage u = i < v.usage.size() ? v.usage[i] : sched::DeviceUsage{};
      const prom::Labels labels = {{"node", node.name},
                                   {"device_uuid", g.uuid},
                                   {"device_index", std::to_string(g.index)},
                                   {"device_type", g.type}};
      mem_limit.Add(labels, static_cast<double>(g.mem_mib) * kMiB);
      core_limit.Add(labels, g.cores / core_div);
      mem_alloc.Add(labels, static_cast<double>(u.mem_mib) * kMiB);
      core_alloc.Add(labels, u.cores / core_div);
      shared.Add(labels, u.slots);
    }
  });
  model.ForEachPlacedPod([&](const sched::PodState& pod) {
    for (size_t c = 0; c < pod.allocation->containers.size(); ++c) {
      for (const sched::AllocatedDevice& d : pod.allocation->containers[c]) {
        const prom::Labels labels = {{"namespace", pod.ns},
                                     {"node", pod.node},
                                     {"pod", pod.name},
                                     {"container_index", std::to_string(c)},
                                     {"device_uuid", d.uuid}};
        vmem.Add(labels, static_cast<double>(d.mem_mib) * kMiB);
        vcore.Add(labels, d.cores / core_div);
      }
    }
  });

  std::string out;
  for (const MetricFamily* f :
       {&mem_limit, &core_limit, &mem_alloc, &core_alloc, &shared, &vmem, &vcore}) {
    f->Render(out);
  }
  filter.Render("vgpu_scheduler_filter_duration_seconds", "Latency of the extender's filter verb",
                out);
  prioritize.Render("vgpu_scheduler_prioritize_duration_seconds",
                    "Latency of the extender's prioritize verb", out);
  bind.Render("vgpu_scheduler_bind_duration_seconds",
              "Latency of the extender's bind verb, lock wait included", out);
  out +=
      "# HELP vgpu_scheduler_node_rejections_total Nodes rejected by filter, by reason word\n"
      "# TYPE vgpu_scheduler_node_rejections_total counter\n";
  for (size_t i = 0; i < rejections_.size(); ++i) {
    out += "vgpu_scheduler_node_rejections_total{reason=\"" +
           std::string(sched::ReasonName(static_cast<sched::Reason>(i))) + "\"} " +
           std::to_string(rejections_[i].load(std::memory_order_relaxed)) + "\n";
  }
  const std::pair<const char*, const std::atomic<uint64_t>*> counters[] = {
      {"vgpu_scheduler_bind_failures_total", &bind_failures},
      {"vgpu_scheduler_node_lock_takeovers_total", &lock_takeovers},
      {"vgpu_scheduler_webhook_allowed_total", &webhook_allowed},
      {"vgpu_scheduler_webhook_denied_total", &webhook_denied},
      {"vgpu_scheduler_bad_requests_total", &bad_requests}};
  for (const auto& [name, value] : counters) {
    out += "# TYPE " + std::string(name) + " counter\n" + name + " " +
           std::to_string(value->load(std::memory_order_relaxed)) + "\n";
  }
  out += "# TYPE vgpu_scheduler_nodes gauge\nvgpu_scheduler_nodes " +
         std::to_string(model.node_count()) + "\n";
  out += "# TYPE vgpu_scheduler_reservations gauge\nvgpu_scheduler_reservations " +
         std::to_string(model.reservation_count()) + "\n";
  return out;
}

}  // namespace vgpu::scheduler
