#pragma once

// What kube-scheduler sends to a scheduler extender (k8s.io/kube-scheduler/extender/v1, with
// nodeCacheCapable: node names only) and to a mutating admission webhook (AdmissionReview v1),
// over HTTP to the real `vgpu-scheduler` server. The simulated kube-scheduler's only way in.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace httplib {
class Client;
}

namespace vgpu::sim {

struct FilterResult {
  std::vector<std::string> feasible;
  std::map<std::string, std::string> failed;  // node -> reason (resolvable and not)
  std::string error;                          // the extender's own error, if any
};

struct HostScore {
  std::string host;
  int64_t score = 0;
};

struct AdmissionResult {
  bool allowed = false;
  std::string message;  // why it was denied
  nlohmann::json pod;   // the pod with the webhook's patch applied (when allowed)
};

class ExtenderClient {
 public:
  // `base_url` like "http://127.0.0.1:12345" (paths /filter, /prioritize, /bind, /webhook).
  static Result<std::unique_ptr<ExtenderClient>> Connect(const std::string& base_url);
  ~ExtenderClient();
  ExtenderClient(const ExtenderClient&) = delete;
  ExtenderClient& operator=(const ExtenderClient&) = delete;

  Result<AdmissionResult> Admit(const nlohmann::json& pod);
  Result<FilterResult> Filter(const nlohmann::json& pod, const std::vector<std::string>& nodes);
  Result<std::vector<HostScore>> Prioritize(const nlohmann::json& pod,
                                            const std::vector<std::string>& nodes);
  // ExtenderPreemptionArgs as kube-scheduler 1.20 sends them to a nodeCacheCapable extender (Go
  // field names; `victims`: node -> UIDs its own plugins chose) -> node -> victim UIDs.
  Result<std::map<std::string, std::vector<std::string>>> Preempt(
      const nlohmann::json& pod, const std::map<std::string, std::vector<std::string>>& victims);
  // A non-empty `Error` in the answer is returned as a FailedPrecondition with its text.
  Status Bind(const std::string& ns, const std::string& name, const std::string& uid,
              const std::string& node);

 private:
  explicit ExtenderClient(std::unique_ptr<httplib::Client> http);
  Result<nlohmann::json> Post(const char* path, const nlohmann::json& body);

  std::unique_ptr<httplib::Client> http_;
  uint64_t next_uid_ = 1;
};

// Applies an AdmissionResponse to `pod`: its base64 JSONPatch when present.
Result<nlohmann::json> ApplyAdmissionPatch(const nlohmann::json& pod,
                                           const nlohmann::json& response);

}  // namespace vgpu::sim
