#include "sim/cluster/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace vgpu::sim {

namespace {

using nlohmann::json;

// A plain text table: left-aligned columns, two spaces apart, header underlined by nothing.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t rows() const { return rows_.size() - 1; }

  std::string Render(size_t max_rows) const {
    std::vector<size_t> width;
    const size_t shown = max_rows == 0 ? rows_.size() : std::min(rows_.size(), max_rows + 1);
    for (size_t r = 0; r < shown; ++r) {
      for (size_t c = 0; c < rows_[r].size(); ++c) {
        if (width.size() <= c) width.push_back(0);
        width[c] = std::max(width[c], rows_[r][c].size());
      }
    }
    std::string out;
    for (size_t r = 0; r < shown; ++r) {
      std::string line = "  ";
      for (size_t c = 0; c < rows_[r].size(); ++c) {
        line += rows_[r][c];
        if (c + 1 < rows_[r].size()) line += std::string(width[c] - rows_[r][c].size() + 2, ' ');
      }
      out += line + "\n";
    }
    if (shown < rows_.size()) {
      out += "  ... " + std::to_string(rows_.size() - shown) + " more (use --json for all)\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

struct GpuLabel {
  std::string node;
  int index = 0;
};

std::map<std::string, GpuLabel> LabelGpus(const std::vector<GpuUsage>& usage) {
  std::map<std::string, GpuLabel> out;
  std::map<std::string, int> next;
  for (const GpuUsage& u : usage) out[u.gpu.uuid] = GpuLabel{u.node, next[u.node]++};
  return out;
}

std::string DevicesText(const std::vector<AllocatedVgpu>& devices,
                        const std::map<std::string, GpuLabel>& labels) {
  std::string out;
  for (const AllocatedVgpu& d : devices) {
    if (!out.empty()) out += " ";
    auto it = labels.find(d.uuid);
    out += it == labels.end() ? d.uuid : "gpu" + std::to_string(it->second.index);
    out += "(" + std::to_string(d.mem_mib) + "MiB," + std::to_string(d.cores) + "%)";
  }
  return out;
}

std::string Percent(int64_t used, int64_t total) {
  return total > 0 ? std::to_string(used * 100 / total) + "%" : "-";
}

std::string TimingText(const RunResult& run) {
  auto ms = [](const LatencyRecorder& r) {
    return "p50 " + FormatFixed(r.Percentile(50), 2) + " ms, p99 " +
           FormatFixed(r.Percentile(99), 2) + " ms";
  };
  std::string out =
      "Timing: " + std::to_string(run.pods_placed) + " pods placed in " +
      FormatFixed(run.wall_s, 2) + " s wall (" + FormatFixed(run.virtual_s, 1) +
      " s simulated) = " + FormatFixed(run.pods_per_s(), 1) + " pods/s; " +
      std::to_string(run.scheduling_attempts) + " scheduling attempts; " +
      std::to_string(run.api_requests) + " API server requests (" +
      FormatFixed(run.pods_placed > 0 ? static_cast<double>(run.api_requests) / run.pods_placed : 0,
                  1) +
      " per placed pod)\n";
  out += "  admit      " + ms(run.admit_ms) + "\n";
  out += "  filter     " + ms(run.filter_ms) + "\n";
  out += "  prioritize " + ms(run.prioritize_ms) + "\n";
  out += "  bind       " + ms(run.bind_ms) + "\n";
  out += "  f+p+b/pod  " + ms(run.schedule_ms) + "\n";
  if (run.preempt_ms.count() > 0) {
    out += "  preempt    " + ms(run.preempt_ms) + " (" + std::to_string(run.preempt_ms.count()) +
           " dry runs)\n";
  }
  return out;
}

std::string InvariantText(const InvariantReport& r) {
  std::string out = "Invariants: ";
  out += r.ok() ? "OK" : "VIOLATED (" + std::to_string(r.violations.size()) + ")";
  out += " - " + std::to_string(r.gpus_checked) +
         " GPUs not over-committed in memory/cores/slots, " +
         std::to_string(r.placed_pods_checked) + " placed pods match their requests, " +
         std::to_string(r.pending_pods_checked) + " pending pods fit nowhere";
  if (r.quotas_checked > 0) {
    out += ", " + std::to_string(r.quotas_checked) + " namespace quota(s) never exceeded at " +
           std::to_string(r.placements_checked) + " binds and at the end";
  }
  if (r.cordon_checks > 0) {
    out += ", " + std::to_string(r.cordon_checks) + " binds on no cordoned GPU";
  }
  if (r.mutex_checks > 0) {
    out += ", " + std::to_string(r.mutex_checks) + " mutex pods alone on their GPUs when placed";
  }
  out += "\n";
  for (const std::string& v : r.violations) out += "  ! " + v + "\n";
  return out;
}

// Only for runs where some node published pair scores: elsewhere every set scores 0.
std::string TopologyText(const TopologyStats& t) {
  if (t.scored_nodes == 0) return "";
  return "Topology: " + std::to_string(t.multi_gpu_pods) +
         " multi-GPU pods on nodes with pair scores, " + std::to_string(t.all_nvlinked) + " (" +
         Percent(t.all_nvlinked, t.multi_gpu_pods) + ") on GPUs all NVLinked to each other, " +
         "mean pair score " + FormatFixed(t.mean_pair_score(), 1) + "\n";
}

struct Summary {
  int gpus_used = 0;
  int gpus_free = 0;
  int nodes_used = 0;
};

Summary Summarise(const RunResult& run) {
  Summary s;
  std::set<std::string> nodes;
  for (const GpuUsage& u : run.gpu_usage) {
    if (u.slots_used > 0) {
      ++s.gpus_used;
      nodes.insert(u.node);
    } else {
      ++s.gpus_free;
    }
  }
  s.nodes_used = static_cast<int>(nodes.size());
  return s;
}

}  // namespace

std::string FormatFixed(double value, int decimals) {
  char buf[64];
  (void)std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string RenderRunText(const RunResult& run, const ReportOptions& options) {
  std::ostringstream out;
  out << "== " << run.scenario << "  [" << run.policy.Label() << "]\n";
  const auto labels = LabelGpus(run.gpu_usage);

  out << "Placements: " << run.pods_placed << " of " << run.pods_total << " pods placed ("
      << run.pods_completed << " completed and left), " << run.pods_pending << " pending, "
      << run.pods_denied << " denied";
  if (run.preemptions > 0) {
    out << "; " << run.preemptions << " preemptions evicted " << run.pods_preempted << " pods";
  }
  if (run.binds_refused > 0) {
    // Binds run beside the next pods' filters, as kube-scheduler's do: a GPU taken meanwhile
    // refuses the bind and the pod is scheduled again. An outcome, not a fault.
    out << "; binds refused and retried: " << run.binds_refused << " (GPU taken since the filter)";
  }
  out << "\n";
  Table placements({"POD", "NODE", "vGPUs (gpu index, memory, cores)", "AT(s)", "STATE"});
  for (const PodPlacement& p : run.placements) {
    placements.Add({p.ns + "/" + p.name, p.node, DevicesText(p.devices, labels),
                    FormatFixed(p.placed_at_s, 2),
                    p.preempted   ? "preempted"
                    : p.completed ? "completed"
                                  : (p.running ? "running" : "bound")});
  }
  out << placements.Render(options.max_rows);

  out << "GPU allocation (end state):\n";
  Table gpus({"NODE", "GPU", "MODEL", "SLOTS", "MEMORY MiB", "MEM", "CORES"});
  for (const GpuUsage& u : run.gpu_usage) {
    gpus.Add({u.node, std::to_string(labels.at(u.gpu.uuid).index), u.gpu.model,
              std::to_string(u.slots_used) + "/" + std::to_string(u.gpu.slots),
              std::to_string(u.mem_used) + "/" + std::to_string(u.gpu.mem_mib),
              Percent(u.mem_used, u.gpu.mem_mib),
              std::to_string(u.cores_used) + "/" + std::to_string(u.gpu.cores) +
                  (u.gpu.healthy ? "" : " UNHEALTHY")});
  }
  out << gpus.Render(options.max_rows);

  // Pods that fit nowhere are an outcome the scenario may ask for (more than the cluster holds),
  // not a failure of the run: the invariant check below says whether each really fits nowhere.
  out << "Pods not placed: " << run.rejections.size()
      << (run.rejections.empty() ? "" : " (expected where they fit on no node; see Invariants)")
      << "\n";
  if (!run.rejections.empty()) {
    Table rejected({"POD", "WHY"});
    for (const PodRejection& r : run.rejections) {
      rejected.Add({r.ns + "/" + r.name, (r.denied ? "denied by webhook: " : "") + r.reason});
    }
    out << rejected.Render(options.max_rows);
  }
  out << TopologyText(run.topology);
  out << TimingText(run);
  if (run.allocate_failures > 0) {
    out << "Allocate failures on simulated kubelets: " << run.allocate_failures << "\n";
  }
  out << InvariantText(run.invariants);
  return out.str();
}

std::string RenderComparisonText(const std::vector<RunResult>& runs, const ReportOptions& options) {
  if (runs.empty()) return "";
  std::ostringstream out;
  out << "== " << runs[0].scenario << ": the same pods under " << runs.size()
      << " policies, side by side\n";

  // Per pod: where each policy put it.
  std::vector<std::string> header = {"POD"};
  for (const RunResult& r : runs) header.push_back(r.policy.Label());
  Table pods(header);
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> cells;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto labels = LabelGpus(runs[i].gpu_usage);
    auto cell = [&](const std::string& pod, std::string text) {
      auto [it, inserted] = cells.try_emplace(pod, std::vector<std::string>(runs.size(), "-"));
      if (inserted) order.push_back(pod);
      it->second[i] = std::move(text);
    };
    for (const PodPlacement& p : runs[i].placements) {
      std::string where = p.node;
      for (const AllocatedVgpu& d : p.devices) {
        auto it = labels.find(d.uuid);
        where += it == labels.end() ? " ?" : " gpu" + std::to_string(it->second.index);
      }
      cell(p.ns + "/" + p.name, where + (p.completed ? " (done)" : ""));
    }
    for (const PodRejection& r : runs[i].rejections) {
      cell(r.ns + "/" + r.name, r.denied ? "denied" : "PENDING");
    }
  }
  for (const std::string& pod : order) {
    std::vector<std::string> row = {pod};
    for (const std::string& c : cells[pod]) row.push_back(c);
    pods.Add(row);
  }
  out << "Placement (node and GPU index per policy):\n" << pods.Render(options.max_rows);

  // Per GPU: slots and memory used under each policy.
  header[0] = "GPU";
  Table gpus(header);
  const auto labels0 = LabelGpus(runs[0].gpu_usage);
  for (size_t g = 0; g < runs[0].gpu_usage.size(); ++g) {
    const GpuUsage& u0 = runs[0].gpu_usage[g];
    std::vector<std::string> row = {u0.node + " gpu" +
                                    std::to_string(labels0.at(u0.gpu.uuid).index)};
    for (const RunResult& r : runs) {
      if (g >= r.gpu_usage.size()) {
        row.push_back("-");
        continue;
      }
      const GpuUsage& u = r.gpu_usage[g];
      row.push_back(std::to_string(u.slots_used) + " vGPU, mem " +
                    Percent(u.mem_used, u.gpu.mem_mib) + ", cores " + std::to_string(u.cores_used) +
                    "%");
    }
    gpus.Add(row);
  }
  out << "GPU use at the end (vGPUs, memory, cores):\n" << gpus.Render(options.max_rows);

  const bool topology = std::any_of(runs.begin(), runs.end(),
                                    [](const RunResult& r) { return r.topology.scored_nodes > 0; });
  std::vector<std::string> columns = {"POLICY",    "PLACED",       "PENDING", "GPUS IN USE",
                                      "IDLE GPUS", "NODES IN USE", "PODS/S",  "F+P+B P99 ms"};
  if (topology) {
    columns.insert(columns.end(), {"MULTI-GPU ALL NVLINKED", "MEAN PAIR SCORE"});
  }
  columns.push_back("INVARIANTS");
  Table summary(columns);
  for (const RunResult& r : runs) {
    const Summary s = Summarise(r);
    std::vector<std::string> row = {r.policy.Label(),
                                    std::to_string(r.pods_placed),
                                    std::to_string(r.pods_pending),
                                    std::to_string(s.gpus_used),
                                    std::to_string(s.gpus_free),
                                    std::to_string(s.nodes_used),
                                    FormatFixed(r.pods_per_s(), 1),
                                    FormatFixed(r.schedule_ms.Percentile(99), 2)};
    if (topology) {
      row.push_back(std::to_string(r.topology.all_nvlinked) + "/" +
                    std::to_string(r.topology.multi_gpu_pods));
      row.push_back(FormatFixed(r.topology.mean_pair_score(), 1));
    }
    row.push_back(r.invariants.ok() ? "OK" : "VIOLATED");
    summary.Add(std::move(row));
  }
  out << "Summary:\n" << summary.Render(0);
  for (const RunResult& r : runs) {
    if (!r.invariants.ok()) out << "[" << r.policy.Label() << "] " << InvariantText(r.invariants);
  }
  return out.str();
}

json RunToJson(const RunResult& run) {
  auto latency = [](const LatencyRecorder& r) {
    return json{{"count", r.count()},
                {"p50_ms", r.Percentile(50)},
                {"p99_ms", r.Percentile(99)},
                {"max_ms", r.Max()},
                {"mean_ms", r.Mean()}};
  };
  json placements = json::array();
  for (const PodPlacement& p : run.placements) {
    json devs = json::array();
    for (const AllocatedVgpu& d : p.devices) {
      devs.push_back({{"uuid", d.uuid}, {"mem_mib", d.mem_mib}, {"cores", d.cores}});
    }
    placements.push_back({{"pod", p.ns + "/" + p.name},
                          {"node", p.node},
                          {"devices", devs},
                          {"placed_at_s", p.placed_at_s},
                          {"completed", p.completed},
                          {"preempted", p.preempted},
                          {"running", p.running}});
  }
  json gpus = json::array();
  for (const GpuUsage& u : run.gpu_usage) {
    gpus.push_back({{"node", u.node},
                    {"uuid", u.gpu.uuid},
                    {"model", u.gpu.model},
                    {"slots", u.gpu.slots},
                    {"slots_used", u.slots_used},
                    {"mem_mib", u.gpu.mem_mib},
                    {"mem_used_mib", u.mem_used},
                    {"cores", u.gpu.cores},
                    {"cores_used", u.cores_used},
                    {"healthy", u.gpu.healthy}});
  }
  json rejected = json::array();
  for (const PodRejection& r : run.rejections) {
    rejected.push_back({{"pod", r.ns + "/" + r.name}, {"reason", r.reason}, {"denied", r.denied}});
  }
  return {{"scenario", run.scenario},
          {"policy", {{"node", run.policy.node_policy}, {"gpu", run.policy.gpu_policy}}},
          {"pods",
           {{"total", run.pods_total},
            {"placed", run.pods_placed},
            {"completed", run.pods_completed},
            {"pending", run.pods_pending},
            {"denied", run.pods_denied},
            {"preempted", run.pods_preempted}}},
          {"preemptions", run.preemptions},
          {"scheduling_attempts", run.scheduling_attempts},
          {"binds_refused", run.binds_refused},
          {"allocate_failures", run.allocate_failures},
          {"placements", placements},
          {"gpus", gpus},
          {"rejected", rejected},
          {"topology",
           {{"scored_nodes", run.topology.scored_nodes},
            {"multi_gpu_pods", run.topology.multi_gpu_pods},
            {"all_nvlinked", run.topology.all_nvlinked},
            {"mean_pair_score", run.topology.mean_pair_score()}}},
          {"timing",
           {{"wall_s", run.wall_s},
            {"virtual_s", run.virtual_s},
            {"pods_per_s", run.pods_per_s()},
            {"api_requests", run.api_requests},
            {"admit", latency(run.admit_ms)},
            {"filter", latency(run.filter_ms)},
            {"prioritize", latency(run.prioritize_ms)},
            {"bind", latency(run.bind_ms)},
            {"schedule", latency(run.schedule_ms)},
            {"preempt", latency(run.preempt_ms)}}},
          {"invariants",
           {{"ok", run.invariants.ok()},
            {"violations", run.invariants.violations},
            {"gpus_checked", run.invariants.gpus_checked},
            {"placed_pods_checked", run.invariants.placed_pods_checked},
            {"pending_pods_checked", run.invariants.pending_pods_checked},
            {"quotas_checked", run.invariants.quotas_checked},
            {"placements_checked", run.invariants.placements_checked},
            {"cordon_checks", run.invariants.cordon_checks},
            {"mutex_checks", run.invariants.mutex_checks}}}};
}

}  // namespace vgpu::sim
