// Every query of the Grafana dashboard (deploy/grafana/vgpu-dashboard.json) must resolve against
// what our exporters write: each metric it selects exists on the scheduler's or the monitor's
// page, and each label it matches, groups or joins on, or shows in a legend, is on those series.
// HAMi's dashboard queries are part of it verbatim, so this also holds them working unchanged.

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/monitor/metrics.h"
#include "core/monitor/snapshot.h"
#include "scheduler/cluster_model.h"
#include "scheduler/metrics.h"
#include "test_objects.h"

namespace vgpu {
namespace {

using nlohmann::json;

// metric name -> every label name seen on its samples, from text-format pages.
std::map<std::string, std::set<std::string>> Series(const std::vector<std::string>& pages) {
  std::map<std::string, std::set<std::string>> out;
  for (const std::string& page : pages) {
    std::stringstream in(page);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t brace = line.find('{');
      const size_t space = line.find(' ');
      const std::string name = line.substr(0, std::min(brace, space));
      auto& labels = out[name];
      if (brace == std::string::npos || brace > space) continue;
      // name{a="x",b="y"} value: label names are what precedes each `="`.
      for (size_t pos = brace + 1; pos < line.size() && line[pos] != '}';) {
        const size_t eq = line.find("=\"", pos);
        if (eq == std::string::npos) break;
        labels.insert(line.substr(pos, eq - pos));
        size_t end = eq + 2;
        while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
        pos = end + 2;  // past `",`
      }
    }
  }
  return out;
}

// What a PromQL expression refers to: metric names with the labels matched in their braces, and
// label names of by/on/without/ignoring clauses.
struct QueryRefs {
  std::map<std::string, std::set<std::string>> selectors;
  std::set<std::string> grouping;
};

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ':';
}

QueryRefs Parse(const std::string& q) {
  static const std::set<std::string> kWords = {
      "sum",  "count",     "avg",       "min",      "max",        "topk",        "bottomk",
      "by",   "on",        "and",       "or",       "unless",     "without",     "ignoring",
      "bool", "rate",      "irate",     "increase", "group_left", "group_right", "label_values",
      "abs",  "clamp_min", "clamp_max", "offset"};
  QueryRefs refs;
  std::string last_word;
  for (size_t i = 0; i < q.size();) {
    const char c = q[i];
    if (c == '"') {  // a string literal outside braces (none expected, but skip it whole)
      i = q.find('"', i + 1) + 1;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      while (i < q.size() && (IsNameChar(q[i]) || q[i] == '.')) ++i;
      continue;
    }
    if (!IsNameChar(c) || c == '$') {
      if (c == '(' && (last_word == "by" || last_word == "on" || last_word == "without" ||
                       last_word == "ignoring")) {
        const size_t close = q.find(')', i);
        std::stringstream names(q.substr(i + 1, close - i - 1));
        std::string name;
        while (std::getline(names, name, ',')) {
          name.erase(0, name.find_first_not_of(' '));
          name.erase(name.find_last_not_of(' ') + 1);
          if (!name.empty()) refs.grouping.insert(name);
        }
        i = close + 1;
        last_word.clear();
        continue;
      }
      ++i;
      continue;
    }
    size_t end = i;
    while (end < q.size() && IsNameChar(q[end])) ++end;
    const std::string word = q.substr(i, end - i);
    i = end;
    last_word = word;
    if (kWords.count(word) != 0) continue;
    auto& labels = refs.selectors[word];
    if (i < q.size() && q[i] == '{') {
      const size_t close = q.find('}', i);
      std::string inside = q.substr(i + 1, close - i - 1);
      // a="x",b=~"y": label names precede the operators.
      size_t pos = 0;
      while (pos < inside.size()) {
        size_t op = inside.find_first_of("=!", pos);
        if (op == std::string::npos) break;
        std::string name = inside.substr(pos, op - pos);
        name.erase(0, name.find_first_not_of(", "));
        labels.insert(name);
        const size_t open = inside.find('"', op);
        pos = inside.find('"', open + 1) + 1;
      }
      i = close + 1;
    }
  }
  return refs;
}

// Labels named in a legend format ("{{namespace}}/{{pod}}").
std::set<std::string> LegendLabels(const std::string& legend) {
  std::set<std::string> out;
  for (size_t pos = legend.find("{{"); pos != std::string::npos; pos = legend.find("{{", pos)) {
    const size_t end = legend.find("}}", pos);
    out.insert(legend.substr(pos + 2, end - pos - 2));
    pos = end;
  }
  return out;
}

// Both exporters' pages for a node with two GPUs and one known pod holding part of the first.
std::vector<std::string> Pages() {
  scheduler::ClusterModel model;
  model.UpsertNode(scheduler::testing::GpuNode("n1", 2, 24000, "NVIDIA A10"));
  json pod = scheduler::testing::GpuPod(
      "p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}});
  pod["spec"]["nodeName"] = "n1";
  pod["metadata"]["annotations"] = {
      {"hami.io/vgpu-devices-allocated", "GPU-n1-0,NVIDIA,3000,30:;"}};
  pod["status"]["phase"] = "Running";
  model.UpsertPod(pod);
  scheduler::SchedulerMetrics scheduler_metrics;

  monitor::NodeSnapshot s;
  s.node = "n1";
  s.time_unix_ms = 1'764'064'800'000;
  for (int i = 0; i < 2; ++i) {
    monitor::GpuView& g = s.gpus.emplace_back();
    g.index = i;
    g.uuid = "GPU-n1-" + std::to_string(i);
    g.type = "NVIDIA A10";
    g.memory_total_bytes = 24000ULL << 20;
    g.memory_used_bytes = 1ULL << 30;
    g.utilization_percent = 40;
    g.memory_utilization_percent = 10;
  }
  monitor::ContainerGpuView& c = s.gpus[0].containers.emplace_back();
  c.namespace_name = "default";
  c.pod = "p";
  c.pod_uid = "uid-p";
  c.container = "main";
  c.memory_used_bytes = 1ULL << 30;
  c.memory_limit_bytes = 3000ULL << 20;
  c.memory_buffer_bytes = 1ULL << 29;
  c.memory_context_bytes = 1ULL << 29;
  c.sm_limit_percent = 30;
  c.utilization_percent = 29;
  c.sharing = monitor::Sharing::kShared;
  c.last_kernel_seconds_ago = 1;
  c.processes.push_back({7, 4007, 1ULL << 30});
  return {scheduler_metrics.Render(model, /*legacy_too=*/false),
          monitor::RenderMetrics(s, s.time_unix_ms)};
}

TEST(Dashboard, EveryQueryResolvesAgainstOurExporters) {
  std::ifstream f(VGPU_DASHBOARD);
  ASSERT_TRUE(f) << "cannot read " << VGPU_DASHBOARD;
  const json dash = json::parse(f);
  const auto series = Series(Pages());
  int queries = 0;
  const auto check = [&](const std::string& where, const std::string& expr,
                         const std::set<std::string>& shown) {
    ++queries;
    const QueryRefs refs = Parse(expr);
    std::set<std::string> available;
    for (const auto& [metric, labels] : refs.selectors) {
      auto it = series.find(metric);
      if (it == series.end()) {
        ADD_FAILURE() << where << ": no exporter writes " << metric << " (query: " << expr << ")";
        continue;
      }
      for (const std::string& l : labels) {
        EXPECT_TRUE(it->second.count(l) != 0)
            << where << ": " << metric << " has no label " << l << " (query: " << expr << ")";
      }
      available.insert(it->second.begin(), it->second.end());
    }
    for (const std::string& l : refs.grouping) {
      EXPECT_TRUE(available.count(l) != 0) << where << ": grouping label " << l << " is on none of "
                                           << "the query's series (query: " << expr << ")";
    }
    for (const std::string& l : shown) {
      EXPECT_TRUE(available.count(l) != 0) << where << ": legend label " << l
                                           << " is on none of the query's series (" << expr << ")";
    }
  };
  for (const json& var : dash["templating"]["list"]) {
    if (var.value("type", "") != "query") continue;
    // label_values(metric, label): the metric must carry the label.
    const std::string q = var["query"];
    const size_t open = q.find('('), comma = q.find(','), close = q.rfind(')');
    const std::string metric = q.substr(open + 1, comma - open - 1);
    std::string label = q.substr(comma + 1, close - comma - 1);
    label.erase(0, label.find_first_not_of(' '));
    std::string selector = metric;
    selector += "{" + label + "=\"x\"}";
    check("variable " + var["name"].get<std::string>(), selector, {});
  }
  for (const json& panel : dash["panels"]) {
    for (const json& t : panel.value("targets", json::array())) {
      check("panel '" + panel["title"].get<std::string>() + "'", t["expr"],
            LegendLabels(t.value("legendFormat", "")));
    }
  }
  EXPECT_GE(queries, 20);
}

TEST(Dashboard, TheQueryReaderSeesNamesLabelsAndGroupings) {
  const QueryRefs r =
      Parse(R"(100 * sum by (node) (hami_a{node=~"$node",x!="1"}) and on (device_uuid) hami_b)");
  EXPECT_EQ(r.selectors.size(), 2u);
  EXPECT_EQ(r.selectors.at("hami_a"), (std::set<std::string>{"node", "x"}));
  EXPECT_TRUE(r.selectors.at("hami_b").empty());
  EXPECT_EQ(r.grouping, (std::set<std::string>{"node", "device_uuid"}));
  EXPECT_EQ(LegendLabels("{{namespace}}/{{pod}} v{{vdevice_index}}"),
            (std::set<std::string>{"namespace", "pod", "vdevice_index"}));
}

}  // namespace
}  // namespace vgpu
