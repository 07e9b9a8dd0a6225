#include "core/monitor/snapshot_json.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>

#include "core/codec/bounded_json.h"

namespace vgpu::monitor {
namespace {

using nlohmann::json;

const char* const kSharingNames[] = {"unknown", "shared", "alone"};
const char* const kPolicyNames[] = {"default", "force", "disable", "mps"};
const char* const kStateNames[] = {"ok", "pending", "unusable", "over_limits"};

json Optional(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

// Reads fields of one JSON object, remembering the first problem with its path.
class Reader {
 public:
  Reader(const json& object, std::string path, std::string* error)
      : o_(object), path_(std::move(path)), error_(error) {
    if (!o_.is_object()) Fail("", "an object");
  }

  template <typename T>
  void Number(const char* key, T& out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_number()) return Fail(key, "a number");
    if constexpr (std::is_integral_v<T>) {
      // A converted float or a value out of T's range would be undefined or wrap.
      if (!v->is_number_integer()) return Fail(key, "a whole number");
      if (v->is_number_unsigned() ? !std::in_range<T>(v->get<uint64_t>())
                                  : !std::in_range<T>(v->get<int64_t>())) {
        return Fail(key, "a number in range");
      }
    }
    out = v->get<T>();
  }
  void Text(const char* key, std::string& out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_string()) return Fail(key, "a string");
    out = v->get<std::string>();
  }
  void Bool(const char* key, bool& out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_boolean()) return Fail(key, "true or false");
    out = v->get<bool>();
  }
  void OptionalNumber(const char* key, std::optional<double>& out) {
    const json* v = Find(key);
    if (v == nullptr || v->is_null()) return;
    if (!v->is_number()) return Fail(key, "a number or null");
    out = v->get<double>();
  }
  template <typename E, size_t N>
  void Enum(const char* key, const char* const (&names)[N], E& out) {
    std::string name;
    Text(key, name);
    if (name.empty()) return;
    for (size_t i = 0; i < N; ++i) {
      if (name == names[i]) {
        out = static_cast<E>(i);
        return;
      }
    }
    Fail(key, "one of the known names");
  }
  // Calls read(element, element_path) for each element of the array `key`.
  template <typename F>
  void Array(const char* key, F read) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return Fail(key, "an array");
    for (size_t i = 0; i < v->size(); ++i) {
      read((*v)[i], path_ + "." + key + "[" + std::to_string(i) + "]");
    }
  }

 private:
  const json* Find(const char* key) {
    if (!o_.is_object()) return nullptr;
    auto it = o_.find(key);
    return it == o_.end() ? nullptr : &*it;
  }
  void Fail(const char* key, const char* want) {
    if (!error_->empty()) return;
    *error_ = path_ + (*key != 0 ? std::string(".") + key : "") + " is not " + want;
  }

  const json& o_;
  std::string path_;
  std::string* error_;
};

}  // namespace

const char* SharingName(Sharing s) {
  return kSharingNames[static_cast<int>(s)];
}
const char* CorePolicyName(CorePolicy p) {
  return kPolicyNames[static_cast<int>(p)];
}
const char* ContainerStateName(ContainerState s) {
  return kStateNames[static_cast<int>(s)];
}

std::string SnapshotToJson(const NodeSnapshot& s) {
  json gpus = json::array();
  for (const GpuView& g : s.gpus) {
    json containers = json::array();
    for (const ContainerGpuView& c : g.containers) {
      json procs = json::array();
      for (const ProcessView& p : c.processes) {
        procs.push_back(
            {{"pid", p.pid}, {"host_pid", p.host_pid}, {"memory_bytes", p.memory_bytes}});
      }
      containers.push_back({{"namespace", c.namespace_name},
                            {"pod", c.pod},
                            {"pod_uid", c.pod_uid},
                            {"container", c.container},
                            {"vdevice_index", c.vdevice_index},
                            {"memory_used_bytes", c.memory_used_bytes},
                            {"memory_limit_bytes", c.memory_limit_bytes},
                            {"no_memory", c.no_memory},
                            {"memory_buffer_bytes", c.memory_buffer_bytes},
                            {"memory_context_bytes", c.memory_context_bytes},
                            {"sm_limit_percent", c.sm_limit_percent},
                            {"utilization_percent", c.utilization_percent},
                            {"sharing", SharingName(c.sharing)},
                            {"policy", CorePolicyName(c.policy)},
                            {"last_kernel_seconds_ago", Optional(c.last_kernel_seconds_ago)},
                            {"processes", procs}});
    }
    gpus.push_back({{"index", g.index},
                    {"uuid", g.uuid},
                    {"type", g.type},
                    {"memory_total_bytes", g.memory_total_bytes},
                    {"memory_used_bytes", g.memory_used_bytes},
                    {"utilization_percent", Optional(g.utilization_percent)},
                    {"memory_utilization_percent", Optional(g.memory_utilization_percent)},
                    {"containers", containers}});
  }
  json containers = json::array();
  for (const ContainerStatusView& c : s.containers) {
    containers.push_back({{"namespace", c.namespace_name},
                          {"pod", c.pod},
                          {"pod_uid", c.pod_uid},
                          {"container", c.container},
                          {"state", ContainerStateName(c.state)},
                          {"regions", c.regions},
                          {"problem", c.problem}});
  }
  // Bytes that are not UTF-8 become U+FFFD instead of failing the whole answer: the snapshot
  // carries text from the containers' folders (the monitor also keeps it printable ASCII).
  return json{{"node", s.node},
              {"time_unix_ms", s.time_unix_ms},
              {"gpus", gpus},
              {"containers", containers}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<NodeSnapshot> SnapshotFromJson(const std::string& text) {
  Result<json> parsed = codec::ParseJsonWithin(text, codec::kNodeFileJson, "snapshot");
  if (!parsed.ok()) return parsed.status();
  const json& doc = *parsed;
  std::string error;
  NodeSnapshot s;
  Reader top(doc, "snapshot", &error);
  top.Text("node", s.node);
  top.Number("time_unix_ms", s.time_unix_ms);
  top.Array("gpus", [&](const json& gj, const std::string& gpath) {
    GpuView& g = s.gpus.emplace_back();
    Reader r(gj, gpath, &error);
    r.Number("index", g.index);
    r.Text("uuid", g.uuid);
    r.Text("type", g.type);
    r.Number("memory_total_bytes", g.memory_total_bytes);
    r.Number("memory_used_bytes", g.memory_used_bytes);
    r.OptionalNumber("utilization_percent", g.utilization_percent);
    r.OptionalNumber("memory_utilization_percent", g.memory_utilization_percent);
    r.Array("containers", [&](const json& cj, const std::string& cpath) {
      ContainerGpuView& c = g.containers.emplace_back();
      Reader cr(cj, cpath, &error);
      cr.Text("namespace", c.namespace_name);
      cr.Text("pod", c.pod);
      cr.Text("pod_uid", c.pod_uid);
      cr.Text("container", c.container);
      cr.Number("vdevice_index", c.vdevice_index);
      cr.Number("memory_used_bytes", c.memory_used_bytes);
      cr.Number("memory_limit_bytes", c.memory_limit_bytes);
      cr.Bool("no_memory", c.no_memory);
      cr.Number("memory_buffer_bytes", c.memory_buffer_bytes);
      cr.Number("memory_context_bytes", c.memory_context_bytes);
      cr.Number("sm_limit_percent", c.sm_limit_percent);
      cr.Number("utilization_percent", c.utilization_percent);
      cr.Enum("sharing", kSharingNames, c.sharing);
      cr.Enum("policy", kPolicyNames, c.policy);
      cr.OptionalNumber("last_kernel_seconds_ago", c.last_kernel_seconds_ago);
      cr.Array("processes", [&](const json& pj, const std::string& ppath) {
        ProcessView& p = c.processes.emplace_back();
        Reader pr(pj, ppath, &error);
        pr.Number("pid", p.pid);
        pr.Number("host_pid", p.host_pid);
        pr.Number("memory_bytes", p.memory_bytes);
      });
    });
  });
  top.Array("containers", [&](const json& cj, const std::string& cpath) {
    ContainerStatusView& c = s.containers.emplace_back();
    Reader r(cj, cpath, &error);
    r.Text("namespace", c.namespace_name);
    r.Text("pod", c.pod);
    r.Text("pod_uid", c.pod_uid);
    r.Text("container", c.container);
    r.Enum("state", kStateNames, c.state);
    r.Number("regions", c.regions);
    r.Text("problem", c.problem);
  });
  if (!error.empty()) return InvalidArgument(error);
  return s;
}

}  // namespace vgpu::monitor
