#include "core/sched/preemption.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "core/sched/fit.h"

namespace vgpu::sched {

using nlohmann::json;

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const LabelRequirement& r : requirements) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    switch (r.op) {
      case LabelRequirement::Op::kIn:
        if (!has || r.values.count(it->second) == 0) return false;
        break;
      case LabelRequirement::Op::kNotIn:
        if (has && r.values.count(it->second) != 0) return false;
        break;
      case LabelRequirement::Op::kExists:
        if (!has) return false;
        break;
      case LabelRequirement::Op::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

Result<LabelSelector> ParseLabelSelector(const json& selector) {
  LabelSelector out;
  if (selector.is_null()) return out;
  if (!selector.is_object()) return InvalidArgument("a label selector must be an object");
  if (auto ml = selector.find("matchLabels"); ml != selector.end() && !ml->is_null()) {
    if (!ml->is_object()) return InvalidArgument("matchLabels must be an object");
    for (auto it = ml->begin(); it != ml->end(); ++it) {
      if (!it->is_string()) return InvalidArgument("matchLabels." + it.key() + " is not a string");
      out.requirements.push_back({it.key(), LabelRequirement::Op::kIn, {it->get<std::string>()}});
    }
  }
  if (auto me = selector.find("matchExpressions"); me != selector.end() && !me->is_null()) {
    if (!me->is_array()) return InvalidArgument("matchExpressions must be a list");
    for (const json& e : *me) {
      if (!e.is_object() || !e.value("key", json()).is_string() ||
          !e.value("operator", json()).is_string()) {
        return InvalidArgument("a matchExpressions entry needs a key and an operator");
      }
      LabelRequirement r;
      r.key = e["key"].get<std::string>();
      const std::string op = e["operator"].get<std::string>();
      if (op == "In") {
        r.op = LabelRequirement::Op::kIn;
      } else if (op == "NotIn") {
        r.op = LabelRequirement::Op::kNotIn;
      } else if (op == "Exists") {
        r.op = LabelRequirement::Op::kExists;
      } else if (op == "DoesNotExist") {
        r.op = LabelRequirement::Op::kDoesNotExist;
      } else {
        return InvalidArgument("matchExpressions operator '" + op +
                               "' is not one of In, NotIn, Exists, DoesNotExist");
      }
      if (const json& v = e.value("values", json()); v.is_array()) {
        for (const json& s : v) {
          if (s.is_string()) r.values.insert(s.get<std::string>());
        }
      }
      // As metav1.LabelSelectorAsSelector: In/NotIn need values, Exists/DoesNotExist none.
      const bool set_op = r.op == LabelRequirement::Op::kIn || r.op == LabelRequirement::Op::kNotIn;
      if (set_op == r.values.empty()) {
        return InvalidArgument("matchExpressions " + r.key + " " + op +
                               (set_op ? " needs values" : " takes no values"));
      }
      out.requirements.push_back(std::move(r));
    }
  }
  return out;
}

Result<DisruptionBudget> ReadDisruptionBudget(const json& pdb) {
  DisruptionBudget b;
  if (!pdb.is_object()) return InvalidArgument("a PodDisruptionBudget must be an object");
  const json meta = pdb.value("metadata", json::object());
  b.ns = meta.value("namespace", "");
  b.name = meta.value("name", "");
  const json spec = pdb.value("spec", json::object());
  Result<LabelSelector> sel = ParseLabelSelector(spec.value("selector", json()));
  if (!sel.ok()) {
    return InvalidArgument("PodDisruptionBudget " + b.ns + "/" + b.name + ": " +
                           sel.status().message());
  }
  b.selector = std::move(*sel);
  const json status = pdb.value("status", json::object());
  if (const json& d = status.value("disruptionsAllowed", json()); d.is_number_integer()) {
    b.disruptions_allowed = d.get<int64_t>();
  }
  if (const json& dp = status.value("disruptedPods", json()); dp.is_object()) {
    for (auto it = dp.begin(); it != dp.end(); ++it) b.disrupted_pods.insert(it.key());
  }
  return b;
}

namespace {

struct Size {
  int64_t mem = 0;
  int cores = 0;
};

Size SizeOf(const PreemptionPod& p) {
  Size s;
  for (const auto& [uuid, u] : p.footprint) {
    s.mem += u.mem_mib;
    s.cores += u.cores;
  }
  return s;
}

class Usage {
 public:
  explicit Usage(const NodeView& node) : view_(node) {
    for (size_t i = 0; i < node.gpus.size(); ++i) index_.emplace(node.gpus[i].uuid, i);
    view_.usage.resize(view_.gpus.size());
  }
  void Add(const PreemptionPod& p, int sign) {
    for (const auto& [uuid, u] : p.footprint) {
      auto it = index_.find(uuid);
      if (it == index_.end()) continue;  // a GPU the node no longer lists
      if (sign > 0) {
        view_.usage[it->second] += u;
      } else {
        view_.usage[it->second] -= u;
      }
    }
  }
  NodeFit Fit(const PodRequest& req) const { return FitPod(view_, req); }

 private:
  NodeView view_;
  std::unordered_map<std::string, size_t> index_;
};

// kube-scheduler's filterPodsWithPDBViolation: walks the pods most important first and charges
// each matching budget; a pod whose charge takes a budget below zero violates it.
std::vector<bool> PdbViolations(const std::vector<const PreemptionPod*>& ordered,
                                const std::vector<DisruptionBudget>& budgets) {
  std::vector<int64_t> allowed;
  allowed.reserve(budgets.size());
  for (const DisruptionBudget& b : budgets) allowed.push_back(b.disruptions_allowed);
  std::vector<bool> out(ordered.size(), false);
  for (size_t k = 0; k < ordered.size(); ++k) {
    const PreemptionPod& p = *ordered[k];
    if (p.labels.empty()) continue;
    for (size_t i = 0; i < budgets.size(); ++i) {
      const DisruptionBudget& b = budgets[i];
      if (b.ns != p.ns || b.selector.empty() || !b.selector.Matches(p.labels)) continue;
      if (b.disrupted_pods.count(p.name) != 0) continue;
      if (--allowed[i] < 0) out[k] = true;
    }
  }
  return out;
}

}  // namespace

VictimChoice SelectVictims(const NodeView& node, const PodRequest& req, int32_t preemptor_priority,
                           const std::vector<PreemptionPod>& pods,
                           const std::vector<DisruptionBudget>& budgets) {
  VictimChoice out;
  Usage usage(node);
  std::vector<const PreemptionPod*> candidates;
  for (const PreemptionPod& p : pods) {
    if (p.leaving) {
      usage.Add(p, -1);
    } else if (p.evictable && p.priority < preemptor_priority) {
      candidates.push_back(&p);
    }
  }
  if (NodeFit now = usage.Fit(req); now.ok) {
    out.ok = true;  // room frees once the pods already leaving are gone
    out.allocation = std::move(now.allocation);
    return out;
  }
  for (const PreemptionPod* p : candidates) usage.Add(*p, -1);
  NodeFit all = usage.Fit(req);
  if (!all.ok) {
    out.message = "evicting all " + std::to_string(candidates.size()) +
                  " pods of lower priority than " + std::to_string(preemptor_priority) +
                  " would not make room: " + all.message;
    return out;
  }
  out.allocation = std::move(all.allocation);  // replaced by the fit after each reprieve
  std::vector<Size> sizes;
  sizes.reserve(candidates.size());
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  for (const PreemptionPod* p : candidates) sizes.push_back(SizeOf(*p));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const PreemptionPod& x = *candidates[a];
    const PreemptionPod& y = *candidates[b];
    return std::tie(y.priority, sizes[a].mem, sizes[a].cores, x.start_time, x.uid) <
           std::tie(x.priority, sizes[b].mem, sizes[b].cores, y.start_time, y.uid);
  });
  std::vector<const PreemptionPod*> ordered;
  ordered.reserve(order.size());
  for (size_t i : order) ordered.push_back(candidates[i]);
  const std::vector<bool> violates = PdbViolations(ordered, budgets);
  // PDB-protected pods are taken back first, then the rest, each group most important first.
  for (const bool protected_pass : {true, false}) {
    for (size_t k = 0; k < ordered.size(); ++k) {
      if (violates[k] != protected_pass) continue;
      usage.Add(*ordered[k], +1);
      if (NodeFit kept = usage.Fit(req); kept.ok) {
        out.allocation = std::move(kept.allocation);
        continue;  // reprieved
      }
      usage.Add(*ordered[k], -1);
      out.victims.push_back(ordered[k]->uid);
      if (violates[k]) ++out.pdb_violations;
    }
  }
  out.ok = true;
  return out;
}

}  // namespace vgpu::sched
