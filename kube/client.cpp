#include "kube/client.h"

#include "core/base/http_reason.h"
#include "core/codec/bounded_json.h"
#include "kube/http_transport.h"

namespace vgpu::kube {

using nlohmann::json;

namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kMergePatch = "application/merge-patch+json";
constexpr const char* kJsonPatch = "application/json-patch+json";

}  // namespace

Status StatusFromHttp(const std::string& method, const std::string& path,
                      const HttpResponse& response) {
  std::string message;
  std::string reason;
  // A Status object; anything else (a proxy's page) is quoted as text below.
  Result<json> body = codec::ParseJsonWithin(response.body, codec::kKubeObjectJson, "error answer");
  if (body.ok() && body->is_object()) {
    // A field of another type is no message (json::value would throw).
    const auto text = [&](const char* key) {
      const auto it = body->find(key);
      return it != body->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    message = text("message");
    reason = text("reason");
  }
  if (message.empty()) message = response.body.substr(0, 200);
  std::string text = method + " " + path + ": HTTP " + std::to_string(response.code);
  if (const char* r = HttpReasonPhrase(static_cast<int>(response.code)); *r)
    text += std::string(" ") + r;
  if (!message.empty()) text += ": " + message;
  long c = response.code;
  if (c == 404) return NotFound(text);
  if (c == 409) return reason == "AlreadyExists" ? AlreadyExists(text) : FailedPrecondition(text);
  if (c == 410) return FailedPrecondition(text);
  if (c == 400 || c == 405 || c == 415 || c == 422) return InvalidArgument(text);
  if (c == 401 || c == 403) return PermissionDenied(text);
  if (c == 504) return DeadlineExceeded(text);
  if (c == 429 || c >= 500) return Unavailable(text);
  return Internal(text);
}

json TestResourceVersionOp(std::string_view resource_version) {
  return {{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", resource_version}};
}

Client::Client(const ClientConfig& config)
    : http_(std::make_unique<HttpTransport>(config)), limiter_(config.qps, config.burst) {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::New(ClientConfig config) {
  if (config.server.rfind("http://", 0) != 0 && config.server.rfind("https://", 0) != 0) {
    return InvalidArgument("API server address \"" + config.server +
                           "\" must start with http:// or https://");
  }
  while (config.server.back() == '/') config.server.pop_back();
  return std::unique_ptr<Client>(new Client(config));
}

const ClientConfig& Client::config() const {
  return http_->config();
}

Result<json> Client::Request(const std::string& method, const std::string& path,
                             const std::string& body, const std::string& content_type) {
  limiter_.Acquire();
  auto resp = http_->Do({method, path, body, content_type});
  if (!resp.ok()) return resp.status();
  if (resp->code < 200 || resp->code >= 300) return StatusFromHttp(method, path, *resp);
  if (resp->body.empty()) return json::object();
  // LIST answers included: the loosest of the limits for what the API server sends.
  Result<json> parsed = codec::ParseJsonWithin(resp->body, codec::kKubeListJson, "the answer");
  if (!parsed.ok()) {
    return Status(parsed.status().code() == StatusCode::kInvalidArgument ? StatusCode::kInternal
                                                                         : parsed.status().code(),
                  method + " " + path + ": " + parsed.status().message());
  }
  return std::move(*parsed);
}

Result<json> Client::Get(const ResourceType& type, std::string_view ns, std::string_view name) {
  return Request("GET", ResourcePath(type, ns, name));
}

Result<json> Client::List(const ResourceType& type, std::string_view ns, const ListOptions& o) {
  std::string path = ResourcePath(type, ns);
  std::string q;
  auto add = [&](const char* k, const std::string& v) {
    if (v.empty()) return;
    q += q.empty() ? '?' : '&';
    q += k;
    q += '=';
    q += UrlEncode(v);
  };
  add("labelSelector", o.label_selector);
  add("fieldSelector", o.field_selector);
  add("resourceVersion", o.resource_version);
  if (o.limit > 0) add("limit", std::to_string(o.limit));
  return Request("GET", path + q);
}

Result<json> Client::Create(const ResourceType& type, std::string_view ns, const json& object) {
  return Request("POST", ResourcePath(type, ns), object.dump(), kJson);
}

Result<json> Client::Update(const ResourceType& type, std::string_view ns, const json& object,
                            std::string_view subresource) {
  std::string name;
  if (auto m = object.find("metadata"); m != object.end() && m->is_object()) {
    name = m->value("name", "");
  }
  if (name.empty()) return InvalidArgument("Update: the object has no metadata.name");
  return Request("PUT", ResourcePath(type, ns, name, subresource), object.dump(), kJson);
}

Status Client::Delete(const ResourceType& type, std::string_view ns, std::string_view name) {
  auto r = Request("DELETE", ResourcePath(type, ns, name));
  return r.ok() ? Status::Ok() : r.status();
}

Result<json> Client::MergePatch(const ResourceType& type, std::string_view ns,
                                std::string_view name, const json& patch,
                                std::string_view subresource) {
  return Request("PATCH", ResourcePath(type, ns, name, subresource), patch.dump(), kMergePatch);
}

Result<json> Client::JsonPatch(const ResourceType& type, std::string_view ns, std::string_view name,
                               const json& ops, std::string_view subresource) {
  if (!ops.is_array()) return InvalidArgument("JsonPatch: the operations must be a JSON array");
  return Request("PATCH", ResourcePath(type, ns, name, subresource), ops.dump(), kJsonPatch);
}

Result<json> Client::PatchAnnotations(
    const ResourceType& type, std::string_view ns, std::string_view name,
    const std::map<std::string, std::optional<std::string>>& annotations,
    std::string_view expected_resource_version) {
  json ann = json::object();
  for (const auto& [k, v] : annotations) ann[k] = v ? json(*v) : json(nullptr);
  json patch = {{"metadata", {{"annotations", ann}}}};
  if (!expected_resource_version.empty()) {
    patch["metadata"]["resourceVersion"] = expected_resource_version;
  }
  return MergePatch(type, ns, name, patch);
}

Status Client::Bind(std::string_view ns, std::string_view pod, std::string_view node) {
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", pod}, {"namespace", ns}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  auto r = Request("POST", ResourcePath(kPods, ns, pod, "binding"), binding.dump(), kJson);
  return r.ok() ? Status::Ok() : r.status();
}

Result<json> Client::CreateEvent(std::string_view ns, const json& event) {
  return Create(kEvents, ns, event);
}

Result<json> Client::GetLease(std::string_view ns, std::string_view name) {
  return Get(kLeases, ns, name);
}

Result<json> Client::CreateLease(std::string_view ns, const json& lease) {
  return Create(kLeases, ns, lease);
}

Result<json> Client::UpdateLease(std::string_view ns, const json& lease) {
  return Update(kLeases, ns, lease);
}

std::unique_ptr<Watcher> Client::Watch(const ResourceType& type, std::string_view ns,
                                       WatchOptions options, WatchHandlers handlers) {
  std::unique_ptr<Watcher> w(
      new Watcher(*this, type, std::string(ns), std::move(options), std::move(handlers)));
  w->thread_ = std::thread([raw = w.get()] { raw->Run(); });
  return w;
}

}  // namespace vgpu::kube
