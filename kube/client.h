#pragma once

// A small Kubernetes REST client over libcurl and nlohmann-json.
//
// Thread-safe: any number of threads may call one Client at once (pooled connections, one
// transfer per call). Every request passes the client-side rate limiter (qps/burst of the
// config). Errors carry the HTTP code and the API's Status message, e.g.
// "PATCH /api/v1/namespaces/default/pods/p: HTTP 409 Conflict: Operation cannot be fulfilled ...",
// with codes: 404 NotFound, 409 AlreadyExists (reason AlreadyExists) or FailedPrecondition
// (Conflict: stale resourceVersion, failed JSON-patch test), 400/422 InvalidArgument,
// 401/403 PermissionDenied, 429/5xx and connection failures Unavailable, timeouts DeadlineExceeded.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "kube/config.h"
#include "kube/rate_limiter.h"
#include "kube/resources.h"
#include "kube/watch.h"

namespace vgpu::kube {

class HttpTransport;
struct HttpResponse;

struct ListOptions {
  std::string label_selector;  // "app=x,tier!=db"
  std::string field_selector;  // "spec.nodeName=node-1"
  std::string resource_version;
  int64_t limit = 0;
};

// A JSON-patch operation asserting the object's resourceVersion (a precondition).
nlohmann::json TestResourceVersionOp(std::string_view resource_version);

class Client {
 public:
  static Result<std::unique_ptr<Client>> New(ClientConfig config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientConfig& config() const;

  Result<nlohmann::json> Get(const ResourceType& type, std::string_view ns, std::string_view name);
  // Empty `ns` lists all namespaces. Returns the List object (items, metadata.resourceVersion).
  Result<nlohmann::json> List(const ResourceType& type, std::string_view ns,
                              const ListOptions& options = {});
  Result<nlohmann::json> Create(const ResourceType& type, std::string_view ns,
                                const nlohmann::json& object);
  // PUT of the whole object (name from metadata.name); its metadata.resourceVersion, when set,
  // is a precondition.
  Result<nlohmann::json> Update(const ResourceType& type, std::string_view ns,
                                const nlohmann::json& object, std::string_view subresource = "");
  Status Delete(const ResourceType& type, std::string_view ns, std::string_view name);

  // RFC 7386 merge patch. A metadata.resourceVersion in the patch is a precondition.
  Result<nlohmann::json> MergePatch(const ResourceType& type, std::string_view ns,
                                    std::string_view name, const nlohmann::json& patch,
                                    std::string_view subresource = "");
  // RFC 6902 JSON patch; use TestResourceVersionOp() as the first op for a precondition.
  Result<nlohmann::json> JsonPatch(const ResourceType& type, std::string_view ns,
                                   std::string_view name, const nlohmann::json& ops,
                                   std::string_view subresource = "");
  // Sets (value) or removes (nullopt) annotations with one merge patch; a non-empty
  // `expected_resource_version` makes it conditional (FailedPrecondition when stale).
  Result<nlohmann::json> PatchAnnotations(
      const ResourceType& type, std::string_view ns, std::string_view name,
      const std::map<std::string, std::optional<std::string>>& annotations,
      std::string_view expected_resource_version = "");

  // POST pods/<pod>/binding: assigns the pod to `node`.
  Status Bind(std::string_view ns, std::string_view pod, std::string_view node);
  // core/v1 Event; metadata.name or generateName must be set.
  Result<nlohmann::json> CreateEvent(std::string_view ns, const nlohmann::json& event);

  // coordination.k8s.io/v1 leases (leader election, node heartbeats).
  Result<nlohmann::json> GetLease(std::string_view ns, std::string_view name);
  Result<nlohmann::json> CreateLease(std::string_view ns, const nlohmann::json& lease);
  Result<nlohmann::json> UpdateLease(std::string_view ns, const nlohmann::json& lease);

  // Starts a watch on its own thread; see watch.h.
  std::unique_ptr<Watcher> Watch(const ResourceType& type, std::string_view ns,
                                 WatchOptions options, WatchHandlers handlers);

  // Any request, rate-limited; `path` includes the query. Non-2xx answers become errors.
  Result<nlohmann::json> Request(const std::string& method, const std::string& path,
                                 const std::string& body = "",
                                 const std::string& content_type = "");

  const RateLimiter& rate_limiter() const { return limiter_; }

 private:
  friend class Watcher;
  explicit Client(const ClientConfig& config);

  std::unique_ptr<HttpTransport> http_;
  RateLimiter limiter_;
};

// Maps an HTTP answer to a Status (used by the client and its watch).
Status StatusFromHttp(const std::string& method, const std::string& path,
                      const HttpResponse& response);

}  // namespace vgpu::kube
