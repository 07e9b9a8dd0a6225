#include "scheduler/metrics.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/codec/annotations.h"
#include "core/prom/build_info.h"
#include "core/sched/reasons.h"
#include "scheduler/cluster_model.h"

namespace vgpu::scheduler {
namespace {

// HAMi accounts memory in MiB; its *_bytes metrics are MiB x 2^20.
double MiBToBytes(int64_t mib) {
  return static_cast<double>(mib) * 1024.0 * 1024.0;
}

// HAMi registers its collector through WrapRegistererWith({zone: "vGPU"}), so every series of it
// carries this label, legacy names included (hami_build_info is registered apart and has none).
const prom::Labels::value_type kZone{"zone", "vGPU"};

// Label names of the per-GPU families: HAMi v2.10's, and the pre-v2.9 ones of --legacy-metrics.
struct GpuLabelNames {
  const char* node;
  const char* uuid;
  const char* index;
  const char* type;
  const char* cores;
  const char* memory_limit;
};
constexpr GpuLabelNames kGpuLabels{"node",        "device_uuid",  "device_index",
                                   "device_type", "device_cores", "device_memory_limit"};
constexpr GpuLabelNames kLegacyGpuLabels{"nodeid",     "deviceuuid",  "deviceidx",
                                         "devicetype", "devicecores", "devicememorylimit"};

struct ContainerLabelNames {
  const char* ns;
  const char* node;
  const char* pod;
  const char* container;
  const char* uuid;
};
constexpr ContainerLabelNames kContainerLabels{"namespace", "node", "pod", "container_index",
                                               "device_uuid"};
constexpr ContainerLabelNames kLegacyContainerLabels{"podnamespace", "nodename", "podname",
                                                     "containeridx", "deviceuuid"};

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

prom::MetricFamily LatencyHistogram::Family(std::string name, std::string help) const {
  // Read the count first: observations landing meanwhile can only make buckets exceed it, and
  // the +Inf bucket (= count) must not be below the finite ones.
  const uint64_t n = count();
  std::array<uint64_t, kBounds.size()> cumulative{};
  uint64_t running = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    cumulative[i] = std::min(running, n);
  }
  prom::MetricFamily f(std::move(name), std::move(help), prom::MetricType::kHistogram);
  f.AddHistogram({}, kBounds, cumulative,
                 static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9, n);
  return f;
}

namespace {

// HAMi's families of the cluster model under one naming: v2.10's hami_* names and label names, or
// (`legacy`) the pre-v2.9 ones, which --legacy-metrics writes in addition, as HAMi does.
// hami_resource_quota_limit has no pre-v2.9 name: HAMi added it after the rename.
std::vector<prom::MetricFamily> HamiFamilies(const ClusterModel& model, bool legacy) {
  using prom::MetricFamily;
  // Help texts are HAMi's (cmd/scheduler/metrics.go), so that a page reads like HAMi's.
  const auto family = [legacy](const char* modern, const char* old, const char* help) {
    return MetricFamily(legacy ? old : modern, help);
  };
  MetricFamily mem_limit = family("hami_gpu_memory_limit_bytes", "GPUDeviceMemoryLimit",
                                  "Device memory limit for a certain GPU");
  MetricFamily core_limit = family("hami_gpu_core_limit_ratio", "GPUDeviceCoreLimit",
                                   legacy ? "Device memory core limit for a certain GPU"
                                          : "Device core limit for a certain GPU");
  MetricFamily mem_alloc = family("hami_gpu_memory_allocated_bytes", "GPUDeviceMemoryAllocated",
                                  "Device memory allocated for a certain GPU");
  MetricFamily shared = family("hami_gpu_shared_count", "GPUDeviceSharedNum",
                               "Number of containers sharing this GPU");
  MetricFamily core_alloc = family("hami_gpu_core_allocated_ratio", "GPUDeviceCoreAllocated",
                                   "Device core allocated for a certain GPU");
  MetricFamily overview =
      family("hami_node_gpu_overview", "nodeGPUOverview", "GPU overview on a certain node");
  MetricFamily mem_ratio = family("hami_node_gpu_memory_allocated_ratio", "nodeGPUMemoryPercentage",
                                  "GPU Memory Allocated Percentage on a certain GPU");
  MetricFamily quota_used =
      family("hami_resource_quota_used", "QuotaUsed", "resourcequota usage for a certain device");
  MetricFamily quota_limit("hami_resource_quota_limit", "resourcequota limit for a certain device");
  MetricFamily vmem = family("hami_vgpu_memory_allocated_bytes", "vGPUMemoryAllocated",
                             "vGPU memory allocated from a container");
  MetricFamily vcore = family("hami_vgpu_core_allocated_ratio", "vGPUCoreAllocated",
                              "vGPU core allocated from a container");

  // Cores are percent units as in HAMi: a whole GPU is 100 x deviceCoreScaling, a request of
  // gpucores 30 is 30. Memory is MiB in the model, bytes on the page.
  const GpuLabelNames& gl = legacy ? kLegacyGpuLabels : kGpuLabels;
  model.ForEachNode([&](const sched::NodeState& node) {
    const sched::NodeView& v = node.view;
    for (size_t i = 0; i < v.gpus.size(); ++i) {
      const sched::GpuDevice& g = v.gpus[i];
      const sched::DeviceUsage u = i < v.usage.size() ? v.usage[i] : sched::DeviceUsage{};
      const std::string index = std::to_string(g.index);
      const std::string total_cores = std::to_string(g.cores);
      const prom::Labels gpu = {
          {gl.node, node.name}, {gl.uuid, g.uuid}, {gl.index, index}, {gl.type, g.type}, kZone};
      prom::Labels with_cores = gpu;
      with_cores.emplace_back(gl.cores, total_cores);  // total, not allocated, since v2.10
      prom::Labels overview_labels = with_cores;
      overview_labels.emplace_back(gl.memory_limit, std::to_string(g.mem_mib));  // MiB
      mem_limit.Add(gpu, MiBToBytes(g.mem_mib));
      core_limit.Add(gpu, g.cores);
      mem_alloc.Add(with_cores, MiBToBytes(u.mem_mib));
      shared.Add(gpu, u.slots);
      core_alloc.Add(gpu, u.cores);
      overview.Add(overview_labels, MiBToBytes(u.mem_mib));
      if (g.mem_mib > 0) {
        // A 0-1 fraction despite the help text's "Percentage" (HAMi's metrics_test wants 0.25).
        prom::Labels ratio_labels = {{gl.node, node.name}, {gl.uuid, g.uuid}, {gl.index, index}};
        if (!legacy) ratio_labels.emplace_back(gl.type, g.type);  // added in v2.10 only
        ratio_labels.push_back(kZone);
        mem_ratio.Add(ratio_labels,
                      static_cast<double>(u.mem_mib) / static_cast<double>(g.mem_mib));
      }
    }
  });

  for (const ClusterModel::QuotaRow& q : model.QuotaRows()) {
    const std::string limit = std::to_string(q.limit.value_or(0));
    if (legacy) {
      quota_used.Add({{"quotanamespace", q.ns}, {"quotaName", q.resource}, {"limit", limit}, kZone},
                     static_cast<double>(q.used));
    } else {
      quota_used.Add({{"namespace", q.ns}, {"quota_name", q.resource}, {"limit", limit}, kZone},
                     static_cast<double>(q.used));
      if (q.limit) {
        quota_limit.Add({{"namespace", q.ns}, {"quota_name", q.resource}, kZone},
                        static_cast<double>(*q.limit));
      }
    }
  }

  const ContainerLabelNames& cl = legacy ? kLegacyContainerLabels : kContainerLabels;
  model.ForEachPlacedPod([&](const sched::PodState& pod) {
    // container_index counts init containers first, as the allocation (and HAMi) does.
    for (size_t c = 0; c < pod.allocation->containers.size(); ++c) {
      for (const sched::AllocatedDevice& d : pod.allocation->containers[c]) {
        if (d.uuid.empty()) continue;  // HAMi skips these too
        const prom::Labels labels = {{cl.ns, pod.ns},    {cl.node, pod.node},
                                     {cl.pod, pod.name}, {cl.container, std::to_string(c)},
                                     {cl.uuid, d.uuid},  kZone};
        vmem.Add(labels, MiBToBytes(d.mem_mib));
        vcore.Add(labels, d.cores);
      }
    }
  });

  std::vector<MetricFamily> out;
  out.reserve(11);
  for (MetricFamily* f : {&mem_limit, &core_limit, &mem_alloc, &shared, &core_alloc, &overview,
                          &mem_ratio, &quota_used, &vmem, &vcore}) {
    out.push_back(std::move(*f));
  }
  if (!legacy) out.push_back(std::move(quota_limit));
  return out;
}

}  // namespace

std::string SchedulerMetrics::Render(const ClusterModel& model, bool legacy_too) const {
  using prom::MetricFamily;
  MetricFamily rejections("vgpu_scheduler_node_rejections_total",
                          "Nodes rejected by filter, by reason word", prom::MetricType::kCounter);
  for (size_t i = 0; i < rejections_.size(); ++i) {
    rejections.Add({{"reason", std::string(sched::ReasonName(static_cast<sched::Reason>(i)))}},
                   static_cast<double>(rejections_[i].load(std::memory_order_relaxed)));
  }
  // Every reason from the start (0 until counted), so that an alert on an increase needs no
  // series to appear first.
  MetricFamily would_deny("vgpu_scheduler_webhook_would_deny_total",
                          "Pods the webhook admitted in audit mode that enforce mode denies, by "
                          "reason (invalid-value, override, quota)",
                          prom::MetricType::kCounter);
  for (size_t i = 0; i < would_deny_.size(); ++i) {
    would_deny.Add(
        {{"reason", std::string(sched::AuditReasonName(static_cast<sched::AuditReason>(i)))}},
        static_cast<double>(would_deny_[i].load(std::memory_order_relaxed)));
  }
  const auto counter = [](const char* name, const char* help, const std::atomic<uint64_t>& v) {
    MetricFamily f(name, help, prom::MetricType::kCounter);
    f.Add({}, static_cast<double>(v.load(std::memory_order_relaxed)));
    return f;
  };
  const auto gauge = [](const char* name, const char* help, size_t v) {
    MetricFamily f(name, help);
    f.Add({}, static_cast<double>(v));
    return f;
  };

  // Which GPUs take new pods: health (the device plugin's inventory) and the node's cordon
  // annotation, the two per-GPU gates that leave running pods alone, so an operator sees a GPU
  // taken out of scheduling and why, and sees it come back. The filter's order: health first.
  MetricFamily schedulable("vgpu_scheduler_gpu_schedulable",
                           "1 when the GPU takes new pods, 0 when it is unhealthy (reason "
                           "CardNotHealth) or cordoned by the node annotation " +
                               std::string(annotations::kDeviceCordon) + " (CardCordoned)");
  model.ForEachNode([&](const sched::NodeState& node) {
    for (const sched::GpuDevice& g : node.view.gpus) {
      std::optional<sched::Reason> why;
      if (!g.healthy) {
        why = sched::Reason::kCardNotHealth;
      } else if (node.view.cordoned.contains(g.uuid)) {
        why = sched::Reason::kCardCordoned;
      }
      schedulable.Add({{"device_uuid", g.uuid},
                       {"node", node.name},
                       {"reason", why ? std::string(sched::ReasonName(*why)) : "none"}},
                      why ? 0 : 1);
    }
  });

  // HAMi's families in name order, as client_golang gathers them (with --legacy-metrics the
  // upper-case legacy names sort first, then hami_build_info); our own after them.
  std::vector<MetricFamily> hami = HamiFamilies(model, /*legacy=*/false);
  if (legacy_too) {
    for (MetricFamily& f : HamiFamilies(model, /*legacy=*/true)) hami.push_back(std::move(f));
  }
  hami.push_back(prom::BuildInfoMetric());
  std::sort(hami.begin(), hami.end(),
            [](const MetricFamily& a, const MetricFamily& b) { return a.name() < b.name(); });
  const MetricFamily own[] = {
      filter.Family("vgpu_scheduler_filter_duration_seconds",
                    "Latency of the extender's filter verb"),
      prioritize.Family("vgpu_scheduler_prioritize_duration_seconds",
                        "Latency of the extender's prioritize verb"),
      bind.Family("vgpu_scheduler_bind_duration_seconds",
                  "Latency of the extender's bind verb, lock wait included"),
      preempt.Family("vgpu_scheduler_preempt_duration_seconds",
                     "Latency of the extender's preempt verb"),
      std::move(rejections),
      counter("vgpu_scheduler_preempt_victims_total",
              "Pods named as victims in preempt answers, summed over the candidate nodes "
              "(kube-scheduler evicts those of the one node it picks)",
              preempt_victims),
      counter("vgpu_scheduler_bind_failures_total",
              "Bind requests answered with an error (no fit any more, lock or API failure)",
              bind_failures),
      counter("vgpu_scheduler_node_lock_takeovers_total",
              "Node locks taken over from an owner that had let them expire", lock_takeovers),
      counter("vgpu_scheduler_webhook_allowed_total", "Pods the admission webhook allowed",
              webhook_allowed),
      counter("vgpu_scheduler_webhook_denied_total", "Pods the admission webhook denied",
              webhook_denied),
      std::move(would_deny),
      gauge("vgpu_scheduler_webhook_audit_mode",
            "1 when the webhook runs in audit mode (--webhook-mode=audit: it admits what its "
            "checks refuse, with a warning), 0 when it enforces them",
            webhook_audit.load(std::memory_order_relaxed) ? 1 : 0),
      counter("vgpu_scheduler_bad_requests_total",
              "Extender and webhook requests rejected as malformed (HTTP 400)", bad_requests),
      gauge("vgpu_scheduler_nodes", "Nodes in the scheduler's cluster model", model.node_count()),
      std::move(schedulable),
      gauge("vgpu_scheduler_reservations",
            "Pods whose GPUs bind chose and whose annotations the watch has not shown yet",
            model.reservation_count()),
  };
  std::string out;
  for (const MetricFamily& f : hami) f.Render(out);
  for (const MetricFamily& f : own) f.Render(out);
  return out;
}

}  // namespace vgpu::scheduler
