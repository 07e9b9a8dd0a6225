#include "sim/cluster/extender_client.h"

#include <httplib.h>

#include "core/codec/base64.h"

namespace vgpu::sim {

namespace {

using nlohmann::json;

json NodeNamesArgs(const json& pod, const std::vector<std::string>& nodes) {
  // nodeCacheCapable extenders get names only; `nodes` stays null as kube-scheduler sends it.
  return json{{"pod", pod}, {"nodes", nullptr}, {"nodenames", nodes}};
}

void CollectFailed(const json& result, const char* key, std::map<std::string, std::string>& out) {
  if (!result.contains(key) || !result[key].is_object()) return;
  for (const auto& [node, reason] : result[key].items()) {
    out[node] = reason.is_string() ? reason.get<std::string>() : reason.dump();
  }
}

// Go's encoding/json matches field names case-insensitively; so do we, for answers.
const json* Field(const json& obj, std::string_view name) {
  if (!obj.is_object()) return nullptr;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < k.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(k[i])) ==
             std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (same) return &it.value();
  }
  return nullptr;
}

}  // namespace

Result<json> ApplyAdmissionPatch(const json& pod, const json& response) {
  const json* patch = Field(response, "patch");
  if (patch == nullptr || patch->is_null()) return pod;
  if (!patch->is_string()) return InvalidArgument("AdmissionResponse.patch is not a string");
  Result<std::string> text = codec::Base64Decode(patch->get<std::string>());
  if (!text.ok()) return text.status();
  json ops = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (ops.is_discarded() || !ops.is_array()) {
    return InvalidArgument("AdmissionResponse.patch is not a JSON patch array");
  }
  try {
    return pod.patch(ops);
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("AdmissionResponse.patch does not apply: ") + e.what());
  }
}

Result<std::unique_ptr<ExtenderClient>> ExtenderClient::Connect(const std::string& base_url) {
  auto http = std::make_unique<httplib::Client>(base_url);
  if (!http->is_valid()) return InvalidArgument("extender URL '" + base_url + "' is not usable");
  http->set_keep_alive(true);
  // Requests are small header+body writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms.
  http->set_tcp_nodelay(true);
  http->set_connection_timeout(5, 0);
  http->set_read_timeout(300, 0);  // a bind may wait long on a busy node lock
  return std::unique_ptr<ExtenderClient>(new ExtenderClient(std::move(http)));
}

ExtenderClient::ExtenderClient(std::unique_ptr<httplib::Client> http) : http_(std::move(http)) {}
ExtenderClient::~ExtenderClient() = default;

Result<json> ExtenderClient::Post(const char* path, const json& body) {
  httplib::Result res = http_->Post(path, body.dump(), "application/json");
  if (!res) {
    return Unavailable(std::string("extender POST ") + path + ": " +
                       httplib::to_string(res.error()));
  }
  if (res->status != 200) {
    return Unavailable(std::string("extender POST ") + path + ": HTTP " +
                       std::to_string(res->status) + ": " + res->body.substr(0, 300));
  }
  json parsed = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Internal(std::string("extender POST ") + path +
                    ": answer is not JSON: " + res->body.substr(0, 200));
  }
  return parsed;
}

Result<AdmissionResult> ExtenderClient::Admit(const json& pod) {
  const std::string uid = "sim-admission-" + std::to_string(next_uid_++);
  const json meta = pod.value("metadata", json::object());
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"request",
                  {{"uid", uid},
                   {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                   {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                   {"namespace", meta.value("namespace", "default")},
                   {"name", meta.value("name", "")},
                   {"operation", "CREATE"},
                   {"userInfo", {{"username", "system:serviceaccount:vgpu-sim:scheduler"}}},
                   {"object", pod},
                   {"dryRun", false}}}};
  Result<json> answer = Post("/webhook", review);
  if (!answer.ok()) return answer.status();
  const json* response = Field(*answer, "response");
  if (response == nullptr || !response->is_object()) {
    return Internal("webhook answer has no response object");
  }
  AdmissionResult out;
  const json* allowed = Field(*response, "allowed");
  out.allowed = allowed != nullptr && allowed->is_boolean() && allowed->get<bool>();
  if (const json* status = Field(*response, "status"); status != nullptr && status->is_object()) {
    if (const json* m = Field(*status, "message"); m != nullptr && m->is_string()) {
      out.message = m->get<std::string>();
    }
  }
  if (!out.allowed) return out;
  Result<json> patched = ApplyAdmissionPatch(pod, *response);
  if (!patched.ok()) return patched.status().WithContext("webhook");
  out.pod = std::move(*patched);
  return out;
}

Result<FilterResult> ExtenderClient::Filter(const json& pod,
                                            const std::vector<std::string>& nodes) {
  Result<json> answer = Post("/filter", NodeNamesArgs(pod, nodes));
  if (!answer.ok()) return answer.status();
  FilterResult out;
  if (const json* names = Field(*answer, "nodenames"); names != nullptr && names->is_array()) {
    for (const json& n : *names) {
      if (n.is_string()) out.feasible.push_back(n.get<std::string>());
    }
  }
  CollectFailed(*answer, "failedNodes", out.failed);
  CollectFailed(*answer, "failedAndUnresolvableNodes", out.failed);
  if (const json* e = Field(*answer, "error"); e != nullptr && e->is_string()) {
    out.error = e->get<std::string>();
  }
  return out;
}

Result<std::vector<HostScore>> ExtenderClient::Prioritize(const json& pod,
                                                          const std::vector<std::string>& nodes) {
  Result<json> answer = Post("/prioritize", NodeNamesArgs(pod, nodes));
  if (!answer.ok()) return answer.status();
  if (!answer->is_array()) return Internal("prioritize answer is not a HostPriorityList array");
  std::vector<HostScore> out;
  for (const json& item : *answer) {
    const json* host = Field(item, "host");
    const json* score = Field(item, "score");
    if (host == nullptr || !host->is_string() || score == nullptr || !score->is_number()) {
      return Internal("prioritize answer has an entry without Host/Score: " + item.dump());
    }
    out.push_back(HostScore{host->get<std::string>(), score->get<int64_t>()});
  }
  return out;
}

Result<std::map<std::string, std::vector<std::string>>> ExtenderClient::Preempt(
    const json& pod, const std::map<std::string, std::vector<std::string>>& victims) {
  json meta = json::object();
  for (const auto& [node, uids] : victims) {
    json pods = json::array();
    for (const std::string& u : uids) pods.push_back({{"UID", u}});
    meta[node] = {{"Pods", std::move(pods)}, {"NumPDBViolations", 0}};
  }
  Result<json> answer = Post(
      "/preempt", {{"Pod", pod}, {"NodeNameToVictims", nullptr}, {"NodeNameToMetaVictims", meta}});
  if (!answer.ok()) return answer.status();
  const json* result = Field(*answer, "nodeNameToMetaVictims");
  if (result == nullptr || !result->is_object()) {
    return Internal("preempt answer has no NodeNameToMetaVictims map: " + answer->dump());
  }
  std::map<std::string, std::vector<std::string>> out;
  for (auto it = result->begin(); it != result->end(); ++it) {
    std::vector<std::string>& uids = out[it.key()];
    const json* pods = Field(*it, "pods");
    if (pods == nullptr || !pods->is_array()) continue;
    for (const json& p : *pods) {
      const json* uid = Field(p, "uid");
      if (uid == nullptr || !uid->is_string()) {
        return Internal("preempt answer names a victim without a UID: " + p.dump());
      }
      uids.push_back(uid->get<std::string>());
    }
  }
  return out;
}

Status ExtenderClient::Bind(const std::string& ns, const std::string& name, const std::string& uid,
                            const std::string& node) {
  const json args = {{"PodName", name}, {"PodNamespace", ns}, {"PodUID", uid}, {"Node", node}};
  Result<json> answer = Post("/bind", args);
  if (!answer.ok()) return answer.status();
  if (const json* e = Field(*answer, "error");
      e != nullptr && e->is_string() && !e->get<std::string>().empty()) {
    return FailedPrecondition(e->get<std::string>());
  }
  return Status::Ok();
}

}  // namespace vgpu::sim
