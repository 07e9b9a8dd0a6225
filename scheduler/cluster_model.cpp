#include "scheduler/cluster_model.h"

#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "core/sched/fit.h"

namespace vgpu::scheduler {

using nlohmann::json;

namespace {

std::string UidOf(const json& obj) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return "";
  const json& m = obj["metadata"];
  auto it = m.find("uid");
  if (it != m.end() && it->is_string()) return it->get<std::string>();
  // Objects without a uid (hand-made): namespace/name identifies them.
  const auto str = [&](const char* k) {
    auto f = m.find(k);
    return f != m.end() && f->is_string() ? f->get<std::string>() : std::string();
  };
  const std::string name = str("name");
  return name.empty() ? "" : str("namespace") + "/" + name;
}

}  // namespace

void ClusterModel::RefreshUsage(const std::string& node) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  sched::NodeView& v = it->second.state.view;
  v.usage.assign(v.gpus.size(), {});
  auto u = usage_.find(node);
  if (u == usage_.end()) return;
  for (size_t i = 0; i < v.gpus.size(); ++i) {
    auto g = u->second.find(v.gpus[i].uuid);
    if (g != u->second.end()) v.usage[i] = g->second;
  }
}

void ClusterModel::Count(const PodRecord& rec, int sign) {
  if (rec.footprint.empty() && rec.charge == sched::QuotaAmount{}) return;
  auto& node_usage = usage_[rec.state.node];
  for (const auto& [uuid, u] : rec.footprint) {
    if (sign > 0) {
      node_usage[uuid] += u;
    } else {
      node_usage[uuid] -= u;
    }
  }
  if (sign > 0) {
    ns_charge_[rec.state.ns] += rec.charge;
  } else {
    ns_charge_[rec.state.ns] -= rec.charge;
  }
  RefreshUsage(rec.state.node);
}

void ClusterModel::UpsertNode(const json& node) {
  sched::NodeState s = sched::ReadNode(node);
  if (s.name.empty()) return;
  std::unique_lock lock(mu_);
  const std::string name = s.name;
  nodes_[name].state = std::move(s);
  RefreshUsage(name);
  CapacityMayHaveFreed();
}

void ClusterModel::RemoveNode(const std::string& name) {
  std::unique_lock lock(mu_);
  nodes_.erase(name);
}

void ClusterModel::ReplaceNodes(const json& items) {
  std::unordered_map<std::string, NodeRecord> fresh;
  if (items.is_array()) {
    for (const json& n : items) {
      sched::NodeState s = sched::ReadNode(n);
      if (!s.name.empty()) fresh[s.name].state = std::move(s);
    }
  }
  std::unique_lock lock(mu_);
  nodes_ = std::move(fresh);
  for (auto& [name, rec] : nodes_) RefreshUsage(name);
  CapacityMayHaveFreed();
}

void ClusterModel::UpsertPodLocked(const json& pod) {
  PodRecord rec;
  rec.state = sched::ReadPod(pod);
  if (rec.state.uid.empty()) rec.state.uid = UidOf(pod);
  if (rec.state.uid.empty()) return;
  auto old = pods_.find(rec.state.uid);
  if (rec.state.terminal) {
    // Succeeded or Failed: its GPUs and any reservation are free at once. A pod being deleted
    // keeps them until the watch says it is gone (PodState::deleting).
    if (old != pods_.end()) RemovePodLocked(rec.state.uid);
    return;
  }
  if (old != pods_.end() && old->second.reserved && !rec.state.HoldsDevices() &&
      rec.state.bind_phase != "failed") {
    // The watch has not caught up with our bind yet: keep the reservation.
    old->second.state.bind_phase = rec.state.bind_phase;
    return;
  }
  if (rec.state.HoldsDevices()) {
    rec.footprint = sched::PodFootprint(*rec.state.allocation);
    rec.charge = sched::ChargeOf(*rec.state.allocation);
  }
  if (old != pods_.end()) {
    Count(old->second, -1);
    pods_.erase(old);
  }
  by_name_[{rec.state.ns, rec.state.name}] = rec.state.uid;
  Count(rec, +1);
  const std::string uid = rec.state.uid;
  pods_.emplace(uid, std::move(rec));
}

void ClusterModel::RemovePodLocked(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  if (it->second.reserved || it->second.state.HoldsDevices()) CapacityMayHaveFreed();
  Count(it->second, -1);
  auto n = by_name_.find({it->second.state.ns, it->second.state.name});
  if (n != by_name_.end() && n->second == uid) by_name_.erase(n);
  pods_.erase(it);
}

void ClusterModel::UpsertPod(const json& pod) {
  std::unique_lock lock(mu_);
  UpsertPodLocked(pod);
}

void ClusterModel::RemovePod(const json& pod) {
  sched::PodState s = sched::ReadPod(pod);
  std::unique_lock lock(mu_);
  RemovePodLocked(s.uid.empty() ? UidOf(pod) : s.uid);
}

void ClusterModel::ReplacePods(const json& items) {
  std::unique_lock lock(mu_);
  // Reservations survive a relist: their binds are still in flight.
  std::unordered_map<std::string, PodRecord> keep;
  for (auto& [uid, rec] : pods_) {
    if (rec.reserved) keep.emplace(uid, rec);
  }
  pods_.clear();
  by_name_.clear();
  usage_.clear();
  ns_charge_.clear();
  for (auto& [uid, rec] : keep) {
    by_name_[{rec.state.ns, rec.state.name}] = uid;
    Count(rec, +1);
    pods_.emplace(uid, std::move(rec));
  }
  if (items.is_array()) {
    for (const json& p : items) UpsertPodLocked(p);
  }
  for (auto& [name, rec] : nodes_) RefreshUsage(name);
  CapacityMayHaveFreed();
}

std::string ClusterModel::QuotaNs(const json& quota, std::string* name) const {
  if (!quota.is_object() || !quota.contains("metadata")) return "";
  const json& m = quota["metadata"];
  if (!m.is_object()) return "";
  *name = m.contains("name") && m["name"].is_string() ? m["name"].get<std::string>() : "";
  return m.contains("namespace") && m["namespace"].is_string() ? m["namespace"].get<std::string>()
                                                               : "";
}

void ClusterModel::UpsertQuota(const json& quota) {
  std::string name;
  const std::string ns = QuotaNs(quota, &name);
  if (ns.empty() || name.empty()) return;
  Result<sched::QuotaLimit> limit = sched::ParseResourceQuota(quota, names_);
  std::unique_lock lock(mu_);
  if (!limit.ok() || limit->empty()) {
    quotas_[ns].erase(name);  // unreadable quotas are ignored, as kube ignores unknown ones
    return;
  }
  quotas_[ns][name] = *limit;
  CapacityMayHaveFreed();
}

void ClusterModel::RemoveQuota(const json& quota) {
  std::string name;
  const std::string ns = QuotaNs(quota, &name);
  std::unique_lock lock(mu_);
  auto it = quotas_.find(ns);
  if (it != quotas_.end()) it->second.erase(name);
  CapacityMayHaveFreed();
}

void ClusterModel::ReplaceQuotas(const json& items) {
  {
    std::unique_lock lock(mu_);
    quotas_.clear();
  }
  if (items.is_array()) {
    for (const json& q : items) UpsertQuota(q);
  }
}

ClusterModel::ReserveResult ClusterModel::Reserve(
    const std::string& uid, const std::string& ns, const std::string& name, const std::string& node,
    const std::function<sched::NodeFit(const sched::NodeState&)>& fit, bool only_if_unplaced) {
  ReserveResult out;
  std::unique_lock lock(mu_);
  auto n = nodes_.find(node);
  if (n == nodes_.end()) {
    out.message = "node " + node + " is unknown to the vGPU scheduler";
    return out;
  }
  if (!n->second.state.inventory_error.empty()) {
    out.message = n->second.state.inventory_error;
    return out;
  }
  // A retried bind of the same pod replaces its earlier reservation.
  if (auto old = pods_.find(uid); old != pods_.end()) {
    if (only_if_unplaced && !old->second.state.node.empty()) {
      out.already_placed = true;
      out.message =
          "pod " + ns + "/" + name + " is already placed on node " + old->second.state.node;
      return out;
    }
    RemovePodLocked(uid);
  }
  sched::NodeFit f = fit(n->second.state);
  if (!f.ok) {
    out.message = f.message;
    return out;
  }
  PodRecord rec;
  rec.state.uid = uid;
  rec.state.ns = ns;
  rec.state.name = name;
  rec.state.node = node;
  rec.state.allocation = f.allocation;
  rec.reserved = true;
  rec.footprint = sched::PodFootprint(f.allocation);
  rec.charge = sched::ChargeOf(f.allocation);
  by_name_[{ns, name}] = uid;
  Count(rec, +1);
  const auto& node_usage = usage_[node];
  for (const auto& [uuid, u] : rec.footprint) out.usage_after[uuid] = node_usage.at(uuid);
  pods_.emplace(uid, std::move(rec));
  out.ok = true;
  out.allocation = std::move(f.allocation);
  return out;
}

void ClusterModel::Unreserve(const std::string& uid) {
  std::unique_lock lock(mu_);
  auto it = pods_.find(uid);
  if (it != pods_.end() && it->second.reserved) RemovePodLocked(uid);
}

bool ClusterModel::ReadNode(const std::string& name,
                            const std::function<void(const sched::NodeState&)>& fn) const {
  std::shared_lock lock(mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return false;
  fn(it->second.state);
  return true;
}

void ClusterModel::ReadNodes(const std::vector<std::string>& names,
                             const std::function<void(size_t, const sched::NodeState*)>& fn) const {
  std::shared_lock lock(mu_);
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = nodes_.find(names[i]);
    fn(i, it == nodes_.end() ? nullptr : &it->second.state);
  }
}

void ClusterModel::WithNodes(
    const std::vector<std::string>& names,
    const std::function<void(const std::vector<const sched::NodeState*>&)>& fn) const {
  std::vector<const sched::NodeState*> states(names.size(), nullptr);
  std::shared_lock lock(mu_);
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = nodes_.find(names[i]);
    if (it != nodes_.end()) states[i] = &it->second.state;
  }
  fn(states);
}

void ClusterModel::WithNodePods(
    const std::vector<std::string>& names,
    const std::function<void(const std::vector<const sched::NodeState*>&,
                             const std::vector<std::vector<PlacedPod>>&)>& fn) const {
  std::vector<const sched::NodeState*> states(names.size(), nullptr);
  std::vector<std::vector<PlacedPod>> pods(names.size());
  std::unordered_map<std::string_view, size_t> at;
  at.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) at.emplace(names[i], i);
  std::shared_lock lock(mu_);
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = nodes_.find(names[i]);
    if (it != nodes_.end()) states[i] = &it->second.state;
  }
  for (const auto& [uid, rec] : pods_) {
    if (rec.state.node.empty() || rec.state.terminal) continue;
    auto it = at.find(rec.state.node);
    if (it != at.end()) pods[it->second].push_back({&rec.state, &rec.footprint, rec.reserved});
  }
  fn(states, pods);
}

void ClusterModel::ForEachNode(const std::function<void(const sched::NodeState&)>& fn) const {
  std::shared_lock lock(mu_);
  for (const auto& [name, rec] : nodes_) fn(rec.state);
}

void ClusterModel::ForEachPlacedPod(const std::function<void(const sched::PodState&)>& fn) const {
  std::shared_lock lock(mu_);
  for (const auto& [uid, rec] : pods_) {
    if (rec.state.allocation && !rec.state.node.empty()) fn(rec.state);
  }
}

std::optional<sched::PodState> ClusterModel::FindPod(const std::string& ns,
                                                     const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = by_name_.find({ns, name});
  if (it == by_name_.end()) return std::nullopt;
  auto p = pods_.find(it->second);
  if (p == pods_.end()) return std::nullopt;
  return p->second.state;
}

std::optional<sched::NamespaceQuota> ClusterModel::Quota(const std::string& ns) const {
  std::shared_lock lock(mu_);
  auto it = quotas_.find(ns);
  if (it == quotas_.end() || it->second.empty()) return std::nullopt;
  sched::NamespaceQuota q;
  // Several quotas in one namespace: every one of them must hold, so the tightest wins.
  for (const auto& [name, limit] : it->second) q.limit.Tighten(limit);
  if (auto c = ns_charge_.find(ns); c != ns_charge_.end()) q.used = c->second;
  return q;
}

std::vector<ClusterModel::QuotaRow> ClusterModel::QuotaRows() const {
  std::shared_lock lock(mu_);
  std::set<std::string> namespaces;
  for (const auto& [ns, quotas] : quotas_) {
    if (!quotas.empty()) namespaces.insert(ns);
  }
  for (const auto& [ns, charge] : ns_charge_) namespaces.insert(ns);
  std::vector<QuotaRow> rows;
  for (const std::string& ns : namespaces) {
    QuotaRow mem{ns, names_.memory, 0, std::nullopt};
    QuotaRow cores{ns, names_.cores, 0, std::nullopt};
    if (auto q = quotas_.find(ns); q != quotas_.end()) {
      sched::QuotaLimit tightest;  // as Quota() enforces it
      for (const auto& [name, limit] : q->second) tightest.Tighten(limit);
      mem.limit = tightest.mem_mib;
      cores.limit = tightest.cores;
    }
    const auto charge = ns_charge_.find(ns);
    if (charge != ns_charge_.end()) {
      mem.used = charge->second.mem_mib;
      cores.used = charge->second.cores;
    }
    const bool charged = charge != ns_charge_.end();
    if (charged || mem.limit) rows.push_back(std::move(mem));
    if (charged || cores.limit) rows.push_back(std::move(cores));
  }
  return rows;
}

size_t ClusterModel::node_count() const {
  std::shared_lock lock(mu_);
  return nodes_.size();
}

size_t ClusterModel::pod_count() const {
  std::shared_lock lock(mu_);
  return pods_.size();
}

size_t ClusterModel::reservation_count() const {
  std::shared_lock lock(mu_);
  size_t n = 0;
  for (const auto& [uid, rec] : pods_) n += rec.reserved ? 1 : 0;
  return n;
}

sched::DeviceUsage ClusterModel::UsageOf(const std::string& node, const std::string& uuid) const {
  std::shared_lock lock(mu_);
  auto n = usage_.find(node);
  if (n == usage_.end()) return {};
  auto u = n->second.find(uuid);
  return u == n->second.end() ? sched::DeviceUsage{} : u->second;
}

}  // namespace vgpu::scheduler
