#include "sim/cluster/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "core/codec/quantity.h"
#include "core/sched/policy.h"
#include "sim/cluster/gpu_uuid.h"

namespace vgpu::sim {

namespace {

// yaml-cpp reports type errors by exception; they are caught here and never leave this file.
template <typename T>
Result<T> Scalar(const YAML::Node& node, const std::string& where) {
  if (!node.IsScalar()) return InvalidArgument(where + ": expected a scalar value");
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    return InvalidArgument(where + ": cannot read '" + node.Scalar() + "' as a " +
                           (std::is_same_v<T, std::string> ? "string" : "number"));
  }
}

template <typename T>
Status Optional(const YAML::Node& map, const char* key, const std::string& where,
                std::optional<T>& out) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return Status::Ok();
  Result<T> r = Scalar<T>(v, where + "." + key);
  if (!r.ok()) return r.status();
  out = *r;
  return Status::Ok();
}

template <typename T>
Status WithDefault(const YAML::Node& map, const char* key, const std::string& where, T& out) {
  std::optional<T> v;
  VGPU_RETURN_IF_ERROR(Optional(map, key, where, v));
  if (v) out = *v;
  return Status::Ok();
}

Status CheckKeys(const YAML::Node& map, const std::string& where,
                 std::initializer_list<std::string_view> known) {
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return InvalidArgument(std::string(where).append(": unknown key '").append(key).append("'"));
    }
  }
  return Status::Ok();
}

constexpr int kMaxNuma = 255;

// A virtual time in seconds: a finite number within 0..kMaxVirtualSeconds (NaN and infinities
// would leave the event clock and the sort by arrival without an order).
Status CheckSeconds(const std::string& where, double seconds) {
  if (!(seconds >= 0 && seconds <= ScenarioLimits::kMaxVirtualSeconds)) {
    std::ostringstream text;
    text << where << ": must be 0.." << ScenarioLimits::kMaxVirtualSeconds << " seconds, got "
         << seconds;
    return InvalidArgument(text.str());
  }
  return Status::Ok();
}

Status ParseGpus(const YAML::Node& list, const std::string& where, const std::string& node_name,
                 std::vector<GpuSpec>& out) {
  if (!list || !list.IsSequence() || list.size() == 0) {
    return InvalidArgument(where + ".gpus: expected a non-empty list of GPU groups");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node g = list[i];
    const std::string gw = where + ".gpus[" + std::to_string(i) + "]";
    if (!g.IsMap()) return InvalidArgument(gw + ": expected a map with model and memory");
    VGPU_RETURN_IF_ERROR(CheckKeys(g, gw, {"model", "memory", "count", "numa", "uuids"}));
    GpuSpec spec;
    int count = 1;
    VGPU_RETURN_IF_ERROR(WithDefault(g, "model", gw, spec.model));
    VGPU_RETURN_IF_ERROR(WithDefault(g, "memory", gw, spec.memory_mib));
    VGPU_RETURN_IF_ERROR(WithDefault(g, "count", gw, count));
    VGPU_RETURN_IF_ERROR(WithDefault(g, "numa", gw, spec.numa));
    if (spec.model.empty()) return InvalidArgument(gw + ".model: required (e.g. NVIDIA A100)");
    if (spec.memory_mib <= 0 || spec.memory_mib > ScenarioLimits::kMaxGpuMemoryMiB) {
      return InvalidArgument(gw + ".memory: required, MiB in 1.." +
                             std::to_string(ScenarioLimits::kMaxGpuMemoryMiB));
    }
    if (spec.numa < 0 || spec.numa > kMaxNuma) {
      return InvalidArgument(gw + ".numa: must be 0.." + std::to_string(kMaxNuma));
    }
    if (count <= 0 || count > ScenarioLimits::kMaxGpusPerNode) {
      return InvalidArgument(gw + ".count: must be 1.." +
                             std::to_string(ScenarioLimits::kMaxGpusPerNode));
    }
    if (out.size() + static_cast<size_t>(count) > ScenarioLimits::kMaxGpusPerNode) {
      return InvalidArgument(where + ".gpus: more than " +
                             std::to_string(ScenarioLimits::kMaxGpusPerNode) + " GPUs on one node");
    }
    std::vector<std::string> uuids;
    if (const YAML::Node u = g["uuids"]; u && !u.IsNull()) {
      if (!u.IsSequence() || static_cast<int>(u.size()) != count) {
        return InvalidArgument(
            gw + ".uuids: expected a list of exactly count=" + std::to_string(count) + " UUIDs");
      }
      for (size_t k = 0; k < u.size(); ++k) {
        Result<std::string> s = Scalar<std::string>(u[k], gw + ".uuids");
        if (!s.ok()) return s.status();
        uuids.push_back(*s);
      }
    }
    for (int k = 0; k < count; ++k) {
      GpuSpec one = spec;
      const int index = static_cast<int>(out.size());
      one.uuid = uuids.empty() ? SimulatedGpuUuid(node_name, index) : uuids[k];
      out.push_back(std::move(one));
    }
  }
  return Status::Ok();
}

Status ParseNodes(const YAML::Node& list, Scenario& sc) {
  if (!list || !list.IsSequence() || list.size() == 0) {
    return InvalidArgument("nodes: expected a non-empty list");
  }
  size_t gpus = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node n = list[i];
    const std::string where = "nodes[" + std::to_string(i) + "]";
    if (!n.IsMap()) return InvalidArgument(where + ": expected a map with name and gpus");
    VGPU_RETURN_IF_ERROR(CheckKeys(n, where, {"name", "count", "gpus", "topology"}));
    std::string name;
    std::string topology;
    std::optional<int> count;
    VGPU_RETURN_IF_ERROR(WithDefault(n, "name", where, name));
    VGPU_RETURN_IF_ERROR(WithDefault(n, "topology", where, topology));
    VGPU_RETURN_IF_ERROR(Optional(n, "count", where, count));
    if (name.empty()) return InvalidArgument(where + ".name: required");
    if (count && (*count <= 0 || *count > ScenarioLimits::kMaxNodes)) {
      return InvalidArgument(where + ".count: must be 1.." +
                             std::to_string(ScenarioLimits::kMaxNodes));
    }
    // With `count`, `name` is a prefix: node-a-0, node-a-1, ... Expanded within the limits only.
    const int copies = count.value_or(1);
    for (int k = 0; k < copies; ++k) {
      if (sc.nodes.size() >= ScenarioLimits::kMaxNodes) {
        return InvalidArgument(where + ": more than " + std::to_string(ScenarioLimits::kMaxNodes) +
                               " nodes in the scenario (the most `vgpu sim` runs)");
      }
      NodeSpec node;
      node.name = count ? name + "-" + std::to_string(k) : name;
      node.topology = topology;
      VGPU_RETURN_IF_ERROR(ParseGpus(n["gpus"], where, node.name, node.gpus));
      gpus += node.gpus.size();
      if (gpus > ScenarioLimits::kMaxGpus) {
        return InvalidArgument(where + ": more than " + std::to_string(ScenarioLimits::kMaxGpus) +
                               " GPUs in the scenario (the most `vgpu sim` runs)");
      }
      sc.nodes.push_back(std::move(node));
    }
  }
  return Status::Ok();
}

Status ParsePods(const YAML::Node& list, Scenario& sc) {
  if (!list) return Status::Ok();
  if (!list.IsSequence()) return InvalidArgument("pods: expected a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node p = list[i];
    const std::string where = "pods[" + std::to_string(i) + "]";
    if (!p.IsMap()) return InvalidArgument(where + ": expected a map with name and requests");
    VGPU_RETURN_IF_ERROR(
        CheckKeys(p, where,
                  {"name", "namespace", "count", "arrival", "interval", "duration", "gpu", "gpumem",
                   "gpumem-percentage", "gpucores", "priority", "annotations"}));
    PodSpec spec;
    std::optional<int> count;
    double interval = 0;
    VGPU_RETURN_IF_ERROR(WithDefault(p, "name", where, spec.name));
    VGPU_RETURN_IF_ERROR(WithDefault(p, "namespace", where, spec.ns));
    VGPU_RETURN_IF_ERROR(Optional(p, "count", where, count));
    VGPU_RETURN_IF_ERROR(WithDefault(p, "arrival", where, spec.arrival_s));
    VGPU_RETURN_IF_ERROR(WithDefault(p, "interval", where, interval));
    VGPU_RETURN_IF_ERROR(Optional(p, "duration", where, spec.duration_s));
    VGPU_RETURN_IF_ERROR(Optional(p, "gpu", where, spec.gpus));
    VGPU_RETURN_IF_ERROR(Optional(p, "gpumem", where, spec.mem_mib));
    VGPU_RETURN_IF_ERROR(Optional(p, "gpumem-percentage", where, spec.mem_percent));
    VGPU_RETURN_IF_ERROR(Optional(p, "gpucores", where, spec.cores));
    VGPU_RETURN_IF_ERROR(Optional(p, "priority", where, spec.priority));
    if (const YAML::Node a = p["annotations"]; a && !a.IsNull()) {
      if (!a.IsMap()) return InvalidArgument(where + ".annotations: expected a map of strings");
      for (const auto& kv : a) {
        Result<std::string> v = Scalar<std::string>(kv.second, where + ".annotations");
        if (!v.ok()) return v.status();
        spec.annotations[kv.first.Scalar()] = *v;
      }
    }
    if (spec.name.empty()) return InvalidArgument(where + ".name: required");
    if (count && (*count <= 0 || *count > ScenarioLimits::kMaxPods)) {
      return InvalidArgument(where + ".count: must be 1.." +
                             std::to_string(ScenarioLimits::kMaxPods));
    }
    VGPU_RETURN_IF_ERROR(CheckSeconds(where + ".arrival", spec.arrival_s));
    VGPU_RETURN_IF_ERROR(CheckSeconds(where + ".interval", interval));
    if (spec.duration_s) VGPU_RETURN_IF_ERROR(CheckSeconds(where + ".duration", *spec.duration_s));
    const int copies = count.value_or(1);
    for (int k = 0; k < copies; ++k) {
      if (sc.pods.size() >= ScenarioLimits::kMaxPods) {
        return InvalidArgument(where + ": more than " + std::to_string(ScenarioLimits::kMaxPods) +
                               " pods in the scenario (the most `vgpu sim` runs)");
      }
      PodSpec one = spec;
      if (count) one.name = spec.name + "-" + std::to_string(k);
      one.arrival_s = spec.arrival_s + interval * k;
      sc.pods.push_back(std::move(one));
    }
  }
  return Status::Ok();
}

Status ParsePolicies(const YAML::Node& list, Scenario& sc) {
  if (!list) return Status::Ok();
  if (!list.IsSequence()) return InvalidArgument("policies: expected a list of {node, gpu}");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "policies[" + std::to_string(i) + "]";
    if (!list[i].IsMap()) return InvalidArgument(where + ": expected {node: .., gpu: ..}");
    VGPU_RETURN_IF_ERROR(CheckKeys(list[i], where, {"node", "gpu"}));
    PolicyPair pair;
    VGPU_RETURN_IF_ERROR(WithDefault(list[i], "node", where, pair.node_policy));
    VGPU_RETURN_IF_ERROR(WithDefault(list[i], "gpu", where, pair.gpu_policy));
    sc.policies.push_back(pair);
  }
  return Status::Ok();
}

// The quota keys the extender reads (HAMi's default resource names, which the sim's pods use).
bool IsQuotaKey(const std::string& key, bool* memory) {
  for (const char* prefix : {"limits.", "requests.", ""}) {
    for (const bool mem : {true, false}) {
      if (key == std::string(prefix) + (mem ? "nvidia.com/gpumem" : "nvidia.com/gpucores")) {
        *memory = mem;
        return true;
      }
    }
  }
  return false;
}

Status ParseQuotas(const YAML::Node& list, Scenario& sc) {
  if (!list || list.IsNull()) return Status::Ok();
  if (!list.IsSequence()) return InvalidArgument("quotas: expected a list of {namespace, hard}");
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node q = list[i];
    const std::string where = "quotas[" + std::to_string(i) + "]";
    if (!q.IsMap()) return InvalidArgument(where + ": expected a map with namespace and hard");
    VGPU_RETURN_IF_ERROR(CheckKeys(q, where, {"name", "namespace", "hard"}));
    QuotaSpec spec;
    VGPU_RETURN_IF_ERROR(WithDefault(q, "namespace", where, spec.ns));
    spec.name = "quota-" + std::to_string(i);
    VGPU_RETURN_IF_ERROR(WithDefault(q, "name", where, spec.name));
    const YAML::Node hard = q["hard"];
    if (!hard || !hard.IsMap() || hard.size() == 0) {
      return InvalidArgument(where +
                             ".hard: expected a map such as {limits.nvidia.com/gpumem: "
                             "20000}");
    }
    for (const auto& kv : hard) {
      const std::string key = kv.first.Scalar();
      std::string kw = where;
      kw.append(".hard.").append(key);
      bool memory = false;
      if (!IsQuotaKey(key, &memory)) {
        return InvalidArgument(kw +
                               ": not a vGPU quota key ([limits.|requests.]nvidia.com/gpumem "
                               "or .../gpucores)");
      }
      Result<std::string> v = Scalar<std::string>(kv.second, kw);
      if (!v.ok()) return v.status();
      // Read as the extender reads it, so that a typo is an error here, not a quota it ignores.
      Result<int64_t> n = memory ? codec::ParseMemoryMiB(*v) : codec::ParseQuantity(*v);
      if (!n.ok()) return n.status().WithContext(kw);
      spec.hard[key] = *v;
    }
    sc.quotas.push_back(std::move(spec));
  }
  return Status::Ok();
}

Status ParseCordons(const YAML::Node& list, Scenario& sc) {
  if (!list || list.IsNull()) return Status::Ok();
  if (!list.IsSequence()) {
    return InvalidArgument("cordons: expected a list of {node, gpus, at, until}");
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node c = list[i];
    const std::string where = "cordons[" + std::to_string(i) + "]";
    if (!c.IsMap()) return InvalidArgument(where + ": expected a map with node and gpus");
    VGPU_RETURN_IF_ERROR(CheckKeys(c, where, {"node", "gpus", "at", "until"}));
    CordonSpec spec;
    VGPU_RETURN_IF_ERROR(WithDefault(c, "node", where, spec.node));
    VGPU_RETURN_IF_ERROR(WithDefault(c, "at", where, spec.at_s));
    VGPU_RETURN_IF_ERROR(Optional(c, "until", where, spec.until_s));
    const YAML::Node gpus = c["gpus"];
    if (!gpus || !gpus.IsSequence() || gpus.size() == 0) {
      return InvalidArgument(where + ".gpus: expected a non-empty list of the node's GPU UUIDs");
    }
    for (size_t k = 0; k < gpus.size(); ++k) {
      Result<std::string> uuid = Scalar<std::string>(gpus[k], where + ".gpus");
      if (!uuid.ok()) return uuid.status();
      spec.gpus.push_back(*uuid);
    }
    sc.cordons.push_back(std::move(spec));
  }
  return Status::Ok();
}

Result<Scenario> ParseDocument(const YAML::Node& root) {
  if (!root.IsMap()) return InvalidArgument("scenario: expected a YAML map at the top level");
  VGPU_RETURN_IF_ERROR(CheckKeys(root, "scenario",
                                 {"name", "description", "deviceSplitCount", "policies", "nodes",
                                  "pods", "quotas", "cordons"}));
  Scenario sc;
  VGPU_RETURN_IF_ERROR(WithDefault(root, "name", "scenario", sc.name));
  VGPU_RETURN_IF_ERROR(WithDefault(root, "description", "scenario", sc.description));
  VGPU_RETURN_IF_ERROR(WithDefault(root, "deviceSplitCount", "scenario", sc.split_count));
  VGPU_RETURN_IF_ERROR(ParsePolicies(root["policies"], sc));
  VGPU_RETURN_IF_ERROR(ParseNodes(root["nodes"], sc));
  VGPU_RETURN_IF_ERROR(ParsePods(root["pods"], sc));
  VGPU_RETURN_IF_ERROR(ParseQuotas(root["quotas"], sc));
  VGPU_RETURN_IF_ERROR(ParseCordons(root["cordons"], sc));
  if (sc.policies.empty()) sc.policies.push_back(PolicyPair{});
  std::stable_sort(sc.pods.begin(), sc.pods.end(),
                   [](const PodSpec& a, const PodSpec& b) { return a.arrival_s < b.arrival_s; });
  VGPU_RETURN_IF_ERROR(ValidateScenario(sc));
  return sc;
}

}  // namespace

Result<std::optional<codec::GpuTopology>> NodeTopology(const NodeSpec& node) {
  if (node.topology.empty()) return std::optional<codec::GpuTopology>();
  std::string_view spec = node.topology;
  for (const TopologyPreset& p : kTopologyPresets) {
    if (spec == p.name) spec = p.spec;
  }
  std::vector<std::string> uuids;
  uuids.reserve(node.gpus.size());
  for (const GpuSpec& g : node.gpus) uuids.push_back(g.uuid);
  Result<codec::GpuTopology> t = codec::ParseTopologySpec(spec, uuids);
  if (!t.ok()) {
    std::string presets;
    for (const TopologyPreset& p : kTopologyPresets) presets += ", " + std::string(p.name);
    return InvalidArgument("node '" + node.name + "': " + t.status().message() + "; presets" +
                           presets.substr(1));
  }
  return std::optional<codec::GpuTopology>(std::move(*t));
}

bool IsKnownNodePolicy(std::string_view policy) {
  return policy == "binpack" || policy == "spread";
}

bool IsKnownGpuPolicy(std::string_view policy) {
  // The scheduler's own parser, so the sim accepts exactly the combinations a pod may ask for.
  return sched::ParseGpuPolicy(policy).ok();
}

Result<Scenario> ParseScenarioYaml(std::string_view text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("scenario is not valid YAML: ") + e.what());
  }
  // Accessing a map-typed node with a wrong shape can still throw deep inside yaml-cpp.
  try {
    return ParseDocument(root);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("scenario has an unexpected shape: ") + e.what());
  }
}

Status ValidateScenario(const Scenario& sc) {
  if (sc.split_count <= 0 || sc.split_count > 1000) {
    return InvalidArgument("deviceSplitCount: must be 1..1000, got " +
                           std::to_string(sc.split_count));
  }
  if (sc.nodes.empty()) return InvalidArgument("nodes: a scenario needs at least one node");
  if (sc.nodes.size() > ScenarioLimits::kMaxNodes) {
    return InvalidArgument(std::to_string(sc.nodes.size()) + " nodes: at most " +
                           std::to_string(ScenarioLimits::kMaxNodes));
  }
  if (sc.pods.size() > ScenarioLimits::kMaxPods) {
    return InvalidArgument(std::to_string(sc.pods.size()) + " pods: at most " +
                           std::to_string(ScenarioLimits::kMaxPods));
  }
  size_t gpus = 0;
  std::set<std::string> names;
  std::set<std::string> uuids;
  for (const NodeSpec& n : sc.nodes) {
    if (!names.insert(n.name).second) return InvalidArgument("node '" + n.name + "' is repeated");
    if (n.gpus.empty()) return InvalidArgument("node '" + n.name + "' has no GPUs");
    if (n.gpus.size() > ScenarioLimits::kMaxGpusPerNode) {
      return InvalidArgument("node '" + n.name + "' has " + std::to_string(n.gpus.size()) +
                             " GPUs: at most " + std::to_string(ScenarioLimits::kMaxGpusPerNode));
    }
    gpus += n.gpus.size();
    if (gpus > ScenarioLimits::kMaxGpus) {
      return InvalidArgument("more than " + std::to_string(ScenarioLimits::kMaxGpus) +
                             " GPUs in the scenario");
    }
    for (const GpuSpec& g : n.gpus) {
      if (!uuids.insert(g.uuid).second) {
        return InvalidArgument("GPU UUID '" + g.uuid + "' appears twice (node " + n.name + ")");
      }
      if (g.memory_mib <= 0 || g.memory_mib > ScenarioLimits::kMaxGpuMemoryMiB) {
        return InvalidArgument("node '" + n.name + "': GPU memory must be 1.." +
                               std::to_string(ScenarioLimits::kMaxGpuMemoryMiB) + " MiB");
      }
    }
    if (Result<std::optional<codec::GpuTopology>> t = NodeTopology(n); !t.ok()) return t.status();
  }
  names.clear();
  for (const PodSpec& p : sc.pods) {
    const std::string who = "pod '" + p.ns + "/" + p.name + "'";
    if (!names.insert(p.ns + "/" + p.name).second) return InvalidArgument(who + " is repeated");
    VGPU_RETURN_IF_ERROR(CheckSeconds(who + ": arrival", p.arrival_s));
    if (p.duration_s && *p.duration_s <= 0) return InvalidArgument(who + ": duration must be > 0");
    if (p.duration_s) VGPU_RETURN_IF_ERROR(CheckSeconds(who + ": duration", *p.duration_s));
    if (p.gpus && (*p.gpus < 0 || *p.gpus > 64))
      return InvalidArgument(who + ": gpu must be 0..64");
    if (p.mem_mib && (*p.mem_mib < 0 || *p.mem_mib > ScenarioLimits::kMaxGpuMemoryMiB)) {
      return InvalidArgument(who + ": gpumem must be 0.." +
                             std::to_string(ScenarioLimits::kMaxGpuMemoryMiB) + " (MiB)");
    }
    if (p.mem_percent && (*p.mem_percent < 0 || *p.mem_percent > 100)) {
      return InvalidArgument(who + ": gpumem-percentage must be 0..100");
    }
    if (p.cores && (*p.cores < 0 || *p.cores > 100)) {
      return InvalidArgument(who + ": gpucores must be 0..100");
    }
  }
  for (size_t i = 0; i < sc.cordons.size(); ++i) {
    const CordonSpec& c = sc.cordons[i];
    const std::string who = "cordons[" + std::to_string(i) + "]";
    auto node = std::find_if(sc.nodes.begin(), sc.nodes.end(),
                             [&](const NodeSpec& n) { return n.name == c.node; });
    if (node == sc.nodes.end()) {
      return InvalidArgument(who + ".node: no node '" + c.node + "' in the scenario");
    }
    if (c.gpus.empty()) return InvalidArgument(who + ".gpus: names no GPU");
    for (const std::string& uuid : c.gpus) {
      auto gpu = std::find_if(node->gpus.begin(), node->gpus.end(),
                              [&](const GpuSpec& g) { return g.uuid == uuid; });
      if (gpu == node->gpus.end()) {
        std::string message = who;
        message.append(".gpus: '").append(uuid).append("' is not a GPU of node ").append(c.node);
        message.append(" (its first is ").append(node->gpus.front().uuid);
        message.append("; give the node's GPUs uuids: to name them)");
        return InvalidArgument(message);
      }
    }
    VGPU_RETURN_IF_ERROR(CheckSeconds(who + ".at", c.at_s));
    if (c.until_s) {
      VGPU_RETURN_IF_ERROR(CheckSeconds(who + ".until", *c.until_s));
      if (*c.until_s <= c.at_s) return InvalidArgument(who + ".until: must be after at");
    }
  }
  names.clear();
  for (const QuotaSpec& q : sc.quotas) {
    if (q.name.empty()) return InvalidArgument("a quota of namespace " + q.ns + " has no name");
    if (!names.insert(q.ns + "/" + q.name).second) {
      return InvalidArgument("quota '" + q.ns + "/" + q.name + "' is repeated");
    }
  }
  for (const PolicyPair& pp : sc.policies) {
    if (!IsKnownNodePolicy(pp.node_policy)) {
      return InvalidArgument("unknown node policy '" + pp.node_policy + "' (binpack or spread)");
    }
    if (Result<sched::GpuPolicy> gp = sched::ParseGpuPolicy(pp.gpu_policy); !gp.ok()) {
      return gp.status();
    }
  }
  return Status::Ok();
}

}  // namespace vgpu::sim
