#include "sim/apiserver/object_store.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include "core/codec/time_format.h"

namespace vgpu::sim {

using nlohmann::json;

namespace {

constexpr ResourceInfo kResources[] = {
    {"pods", "Pod", "v1", true},
    {"nodes", "Node", "v1", false},
    {"events", "Event", "v1", true},
    {"namespaces", "Namespace", "v1", false},
    {"leases", "Lease", "coordination.k8s.io/v1", true},
    {"resourcequotas", "ResourceQuota", "v1", true},
    {"poddisruptionbudgets", "PodDisruptionBudget", "policy/v1", true},
};

std::string KeyOf(std::string_view ns, std::string_view name) {
  std::string k(ns);
  k += '/';
  k += name;
  return k;
}

std::string Describe(const ResourceInfo& r, std::string_view ns, std::string_view name) {
  std::string s(r.plural);
  s += " \"";
  s += name;
  s += "\"";
  if (!ns.empty()) s += std::string(" in namespace \"") + std::string(ns) + "\"";
  return s;
}

std::string NowRfc3339() {
  return codec::FormatRfc3339(
      std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now()));
}

std::string RvOf(const json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto rv = m->find("resourceVersion");
  if (rv == m->end() || !rv->is_string()) return "";
  return rv->get<std::string>();
}

Status ConflictMessage(const ResourceInfo& r, std::string_view name) {
  return FailedPrecondition("Operation cannot be fulfilled on " + std::string(r.plural) + " \"" +
                            std::string(name) +
                            "\": the object has been modified; please apply your changes to the "
                            "latest version and try again");
}

}  // namespace

const ResourceInfo* FindResource(std::string_view api_version, std::string_view plural) {
  for (const auto& r : kResources) {
    if (r.api_version == api_version && r.plural == plural) return &r;
  }
  return nullptr;
}

ObjectStore::ObjectStore(size_t history_limit)
    : history_limit_(std::max<size_t>(history_limit, 1)) {
  uid_counter_ = std::random_device{}();
}

int64_t ObjectStore::NextRvLocked(json& obj) {
  ++rv_;
  obj["metadata"]["resourceVersion"] = std::to_string(rv_);
  return rv_;
}

std::shared_ptr<const std::string> ObjectStore::RecordLocked(const ResourceInfo& r,
                                                             std::string_view ns,
                                                             std::string_view type,
                                                             const json& obj) {
  auto text = std::make_shared<const std::string>(obj.dump());
  WatchEvent ev;
  ev.rv = rv_;
  ev.type = type;
  ev.resource = &r;
  ev.ns = std::string(ns);
  ev.object = std::make_shared<const json>(obj);
  std::string line = "{\"type\":\"";
  line += type;
  line += "\",\"object\":";
  line += *text;
  line += "}\n";
  ev.line = std::make_shared<const std::string>(std::move(line));
  history_.push_back(std::move(ev));
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  cv_.notify_all();
  return text;
}

Result<json> ObjectStore::Create(const ResourceInfo& r, std::string_view ns, json obj) {
  if (!obj.is_object()) return InvalidArgument("object must be a JSON object");
  json& meta = obj["metadata"];
  if (!meta.is_object()) return InvalidArgument("metadata must be an object");
  std::lock_guard lock(mu_);
  std::string name = meta.value("name", "");
  if (name.empty()) {
    std::string prefix = meta.value("generateName", "");
    if (prefix.empty()) {
      return InvalidArgument(std::string(r.kind) +
                             " is invalid: metadata.name: Required value: name or generateName "
                             "is required");
    }
    static constexpr char kAlnum[] = "bcdfghjklmnpqrstvwxz2456789";
    std::mt19937_64 rng(++uid_counter_);
    do {
      name = prefix;
      for (int i = 0; i < 5; ++i) name += kAlnum[rng() % (sizeof kAlnum - 1)];
    } while (objects_[r.plural].count(KeyOf(r.namespaced ? ns : "", name)));
    meta["name"] = name;
  }
  std::string effective_ns = r.namespaced ? std::string(ns) : "";
  if (r.namespaced) {
    if (effective_ns.empty())
      return InvalidArgument("a namespace is required for " + std::string(r.plural));
    if (meta.contains("namespace") && meta["namespace"] != effective_ns) {
      return InvalidArgument("the namespace of the object (" + meta["namespace"].dump() +
                             ") does not match the namespace on the request (" + effective_ns +
                             ")");
    }
    meta["namespace"] = effective_ns;
  } else {
    meta.erase("namespace");
  }
  auto& bucket = objects_[r.plural];
  std::string key = KeyOf(effective_ns, name);
  if (bucket.count(key)) {
    return AlreadyExists(Describe(r, effective_ns, name) + " already exists");
  }
  obj["kind"] = r.kind;
  obj["apiVersion"] = r.api_version;
  char uid[40];
  uint64_t u = ++uid_counter_;
  (void)std::snprintf(uid, sizeof uid, "%08x-%04x-4%03x-8%03x-%012llx",
                      static_cast<unsigned>(u >> 32), static_cast<unsigned>(u >> 16) & 0xffff,
                      static_cast<unsigned>(u) & 0xfff, static_cast<unsigned>(rv_) & 0xfff,
                      static_cast<unsigned long long>(u * 2654435761ULL) & 0xffffffffffffULL);
  meta["uid"] = uid;
  meta["creationTimestamp"] = NowRfc3339();
  meta.erase("deletionTimestamp");
  NextRvLocked(obj);
  auto text = RecordLocked(r, effective_ns, "ADDED", obj);
  auto [it, inserted] = bucket.emplace(key, Entry{std::move(obj), std::move(text)});
  return it->second.object;
}

Result<json> ObjectStore::Get(const ResourceInfo& r, std::string_view ns,
                              std::string_view name) const {
  std::lock_guard lock(mu_);
  auto b = objects_.find(r.plural);
  if (b != objects_.end()) {
    auto it = b->second.find(KeyOf(r.namespaced ? ns : "", name));
    if (it != b->second.end()) return it->second.object;
  }
  return NotFound(Describe(r, r.namespaced ? ns : "", name) + " not found");
}

Result<std::string> ObjectStore::GetSerialized(const ResourceInfo& r, std::string_view ns,
                                               std::string_view name) const {
  std::lock_guard lock(mu_);
  auto b = objects_.find(r.plural);
  if (b != objects_.end()) {
    auto it = b->second.find(KeyOf(r.namespaced ? ns : "", name));
    if (it != b->second.end()) return *it->second.text;
  }
  return NotFound(Describe(r, r.namespaced ? ns : "", name) + " not found");
}

void ObjectStore::ForEachLocked(const ResourceInfo& r, std::string_view ns,
                                const std::function<void(const Entry&)>& visit) const {
  auto b = objects_.find(r.plural);
  if (b == objects_.end()) return;
  auto begin = b->second.begin();
  std::string prefix;
  if (r.namespaced && !ns.empty()) {
    prefix = KeyOf(ns, "");
    begin = b->second.lower_bound(prefix);
  }
  for (auto it = begin; it != b->second.end(); ++it) {
    if (!prefix.empty() && it->first.compare(0, prefix.size(), prefix) != 0) break;
    visit(it->second);
  }
}

ListResult ObjectStore::List(const ResourceInfo& r, std::string_view ns,
                             const std::function<bool(const json&)>& filter) const {
  ListResult out;
  std::lock_guard lock(mu_);
  out.rv = rv_;
  ForEachLocked(r, ns, [&](const Entry& e) {
    if (!filter || filter(e.object)) out.items.push_back(e.object);
  });
  return out;
}

ObjectStore::ListText ObjectStore::ListSerialized(
    const ResourceInfo& r, std::string_view ns,
    const std::function<bool(const json&)>& filter) const {
  ListText out;
  out.items = "[";
  std::lock_guard lock(mu_);
  out.rv = rv_;
  ForEachLocked(r, ns, [&](const Entry& e) {
    if (filter && !filter(e.object)) return;
    if (out.items.size() > 1) out.items += ',';
    out.items += *e.text;
  });
  out.items += ']';
  return out;
}

Result<json> ObjectStore::Mutate(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                 const std::function<Status(json&)>& change) {
  std::string effective_ns = r.namespaced ? std::string(ns) : "";
  std::lock_guard lock(mu_);
  auto& bucket = objects_[r.plural];
  auto it = bucket.find(KeyOf(effective_ns, name));
  if (it == bucket.end()) return NotFound(Describe(r, effective_ns, name) + " not found");
  json updated = it->second.object;
  VGPU_RETURN_IF_ERROR(change(updated));
  if (!updated.is_object() || !updated["metadata"].is_object()) {
    return InvalidArgument("the change would make the object or its metadata a non-object");
  }
  // Identity and server-owned fields cannot change.
  const json& old_meta = it->second.object["metadata"];
  json& meta = updated["metadata"];
  for (const char* k : {"name", "namespace", "uid", "creationTimestamp"}) {
    if (old_meta.contains(k)) {
      meta[k] = old_meta[k];
    } else {
      meta.erase(k);
    }
  }
  updated["kind"] = r.kind;
  updated["apiVersion"] = r.api_version;
  NextRvLocked(updated);
  it->second.text = RecordLocked(r, effective_ns, "MODIFIED", updated);
  it->second.object = std::move(updated);
  return it->second.object;
}

Result<json> ObjectStore::Update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                 json obj) {
  if (!obj.is_object()) return InvalidArgument("object must be a JSON object");
  return Mutate(r, ns, name, [&](json& cur) -> Status {
    std::string want = RvOf(obj);
    if (!want.empty() && want != RvOf(cur)) return ConflictMessage(r, name);
    cur = std::move(obj);
    return Status::Ok();
  });
}

Result<json> ObjectStore::Patch(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                PatchType type, const json& patch) {
  return Mutate(r, ns, name, [&](json& cur) -> Status {
    if (type == PatchType::kMerge) {
      if (!patch.is_object()) return InvalidArgument("a merge patch must be a JSON object");
      std::string want = RvOf(patch);
      if (!want.empty() && want != RvOf(cur)) return ConflictMessage(r, name);
      cur.merge_patch(patch);
      return Status::Ok();
    }
    if (!patch.is_array()) return InvalidArgument("a JSON patch must be an array of operations");
    try {
      cur = cur.patch(patch);
    } catch (const json::other_error& e) {
      // nlohmann reports a failed `test` operation as other_error 501.
      if (e.id == 501) {
        return FailedPrecondition("Operation cannot be fulfilled on " + std::string(r.plural) +
                                  " \"" + std::string(name) + "\": " + e.what());
      }
      return InvalidArgument(std::string("invalid JSON patch: ") + e.what());
    } catch (const json::exception& e) {
      return InvalidArgument(std::string("invalid JSON patch: ") + e.what());
    }
    return Status::Ok();
  });
}

Result<json> ObjectStore::Delete(const ResourceInfo& r, std::string_view ns,
                                 std::string_view name) {
  std::string effective_ns = r.namespaced ? std::string(ns) : "";
  std::lock_guard lock(mu_);
  auto& bucket = objects_[r.plural];
  auto it = bucket.find(KeyOf(effective_ns, name));
  if (it == bucket.end()) return NotFound(Describe(r, effective_ns, name) + " not found");
  json obj = std::move(it->second.object);
  bucket.erase(it);
  NextRvLocked(obj);
  RecordLocked(r, effective_ns, "DELETED", obj);
  return obj;
}

Result<json> ObjectStore::Bind(std::string_view ns, std::string_view pod, std::string_view node) {
  const ResourceInfo& pods = *FindResource("v1", "pods");
  if (node.empty()) return InvalidArgument("Binding: target.name (the node) is required");
  return Mutate(pods, ns, pod, [&](json& cur) -> Status {
    json& spec = cur["spec"];
    if (!spec.is_object()) spec = json::object();
    std::string current = spec.value("nodeName", "");
    if (!current.empty()) {
      return FailedPrecondition("Operation cannot be fulfilled on pods/binding \"" +
                                std::string(pod) + "\": pod " + std::string(pod) +
                                " is already assigned to node \"" + current + "\"");
    }
    spec["nodeName"] = node;
    return Status::Ok();
  });
}

int64_t ObjectStore::resource_version() const {
  std::lock_guard lock(mu_);
  return rv_;
}

WatchBatch ObjectStore::WaitEvents(const ResourceInfo& r, std::string_view ns, int64_t after_rv,
                                   std::chrono::milliseconds timeout) const {
  WatchBatch out;
  std::unique_lock lock(mu_);
  if (after_rv < compacted_rv_) {
    out.gone = true;
    return out;
  }
  uint64_t gen = wake_generation_;
  cv_.wait_for(lock, timeout, [&] { return rv_ > after_rv || wake_generation_ != gen; });
  if (after_rv < compacted_rv_) {
    out.gone = true;
    return out;
  }
  auto first = std::lower_bound(history_.begin(), history_.end(), after_rv + 1,
                                [](const WatchEvent& e, int64_t rv) { return e.rv < rv; });
  for (auto it = first; it != history_.end(); ++it) {
    if (it->resource != &r) continue;
    if (!ns.empty() && it->ns != ns) continue;
    out.events.push_back(*it);
  }
  out.next_rv = std::max(after_rv, rv_);
  return out;
}

void ObjectStore::WakeAll() const {
  std::lock_guard lock(mu_);
  ++wake_generation_;
  cv_.notify_all();
}

void ObjectStore::CompactHistory() {
  std::lock_guard lock(mu_);
  history_.clear();
  compacted_rv_ = rv_;
  cv_.notify_all();
}

}  // namespace vgpu::sim
