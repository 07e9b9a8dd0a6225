#include "scheduler/request_body.h"

#include <exception>
#include <string>

#include "core/codec/bounded_json.h"

namespace vgpu::scheduler {

using nlohmann::json;

namespace {

VerbResult BadRequest(SchedulerMetrics& metrics, std::string message) {
  metrics.bad_requests.fetch_add(1, std::memory_order_relaxed);
  return {400, json{{"error", std::move(message)}}};
}

// A refusal the API server applies: the review's own uid and version, allowed false.
VerbResult DenyReview(std::string_view body, SchedulerMetrics& metrics, const Status& why) {
  const std::string uid =
      codec::FindJsonString(body, {"request", "uid"}, codec::kKubeObjectJson.max_bytes);
  if (uid.empty()) return BadRequest(metrics, why.message());
  std::string api_version =
      codec::FindJsonString(body, {"apiVersion"}, codec::kKubeObjectJson.max_bytes);
  if (api_version != "admission.k8s.io/v1beta1") api_version = "admission.k8s.io/v1";
  metrics.bad_requests.fetch_add(1, std::memory_order_relaxed);
  metrics.webhook_denied.fetch_add(1, std::memory_order_relaxed);
  const json response = {{"uid", uid},
                         {"allowed", false},
                         {"status",
                          {{"code", 400},
                           {"reason", "BadRequest"},
                           {"message", "vgpu-scheduler refuses this object: " + why.message()}}}};
  return {200,
          json{{"apiVersion", api_version}, {"kind", "AdmissionReview"}, {"response", response}}};
}

VerbResult Run(const json& doc, SchedulerMetrics& metrics, const JsonVerb& verb) {
  try {
    return verb(doc);
  } catch (const std::exception& e) {
    // JSON type surprises deep in an object must not take the scheduler down.
    return BadRequest(metrics, std::string("malformed request: ") + e.what());
  }
}

}  // namespace

VerbResult RunJsonVerb(std::string_view body, SchedulerMetrics& metrics, const JsonVerb& verb) {
  Result<json> doc = codec::ParseJsonWithin(body, codec::kKubeObjectJson, "request body");
  if (!doc.ok()) return BadRequest(metrics, doc.status().message());
  return Run(*doc, metrics, verb);
}

VerbResult RunAdmission(std::string_view body, SchedulerMetrics& metrics, Extender& extender) {
  Result<json> doc = codec::ParseJsonWithin(body, codec::kKubeObjectJson, "AdmissionReview");
  if (!doc.ok()) {
    if (doc.status().code() == StatusCode::kResourceExhausted) {
      return DenyReview(body, metrics, doc.status());
    }
    return BadRequest(metrics, doc.status().message());
  }
  return Run(*doc, metrics, [&extender](const json& review) { return extender.Admit(review); });
}

}  // namespace vgpu::scheduler
