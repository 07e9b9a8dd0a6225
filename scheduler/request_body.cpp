#include "scheduler/request_body.h"

#include <algorithm>
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

std::string BusyText(size_t in_use) {
  return "vgpu-scheduler is decoding " + std::to_string(in_use) +
         " JSON values of other requests, all it may hold at once; retry";
}

// Answered with Retry-After (scheduler/server.cpp).
VerbResult Busy(SchedulerMetrics& metrics, size_t in_use) {
  metrics.bad_requests.fetch_add(1, std::memory_order_relaxed);
  return {503, json{{"error", BusyText(in_use)}}};
}

// Room in `budget` for the most values `body` can hold (up to one document's limit).
bool Reserve(std::string_view body, DecodeBudget& budget, DecodeBudget::Lease& lease) {
  return budget.Take(std::min(codec::MostJsonValues(body), codec::kKubeObjectJson.max_values),
                     lease);
}

// A refusal the API server applies: the review's own uid and version, allowed false.
VerbResult DenyReview(std::string_view body, SchedulerMetrics& metrics, const std::string& why,
                      int code = 400, const char* reason = "BadRequest") {
  const std::string uid =
      codec::FindJsonString(body, {"request", "uid"}, codec::kKubeObjectJson.max_bytes);
  if (uid.empty()) return BadRequest(metrics, why);
  std::string api_version =
      codec::FindJsonString(body, {"apiVersion"}, codec::kKubeObjectJson.max_bytes);
  if (api_version != "admission.k8s.io/v1beta1") api_version = "admission.k8s.io/v1";
  metrics.bad_requests.fetch_add(1, std::memory_order_relaxed);
  metrics.webhook_denied.fetch_add(1, std::memory_order_relaxed);
  const json response = {{"uid", uid},
                         {"allowed", false},
                         {"status",
                          {{"code", code},
                           {"reason", reason},
                           {"message", "vgpu-scheduler refuses this object: " + why}}}};
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

VerbResult RunJsonVerb(std::string_view body, SchedulerMetrics& metrics, DecodeBudget& budget,
                       const JsonVerb& verb) {
  DecodeBudget::Lease lease;
  if (!Reserve(body, budget, lease)) return Busy(metrics, budget.in_use());
  Result<json> doc = codec::ParseJsonWithin(body, codec::kKubeObjectJson, "request body");
  if (!doc.ok()) return BadRequest(metrics, doc.status().message());
  return Run(*doc, metrics, verb);
}

VerbResult RunAdmission(std::string_view body, SchedulerMetrics& metrics, DecodeBudget& budget,
                        Extender& extender) {
  DecodeBudget::Lease lease;
  if (!Reserve(body, budget, lease)) {
    return DenyReview(body, metrics, BusyText(budget.in_use()), 429, "TooManyRequests");
  }
  Result<json> doc = codec::ParseJsonWithin(body, codec::kKubeObjectJson, "AdmissionReview");
  if (!doc.ok()) {
    if (doc.status().code() == StatusCode::kResourceExhausted) {
      return DenyReview(body, metrics, doc.status().message());
    }
    return BadRequest(metrics, doc.status().message());
  }
  return Run(*doc, metrics, [&extender](const json& review) { return extender.Admit(review); });
}

}  // namespace vgpu::scheduler
