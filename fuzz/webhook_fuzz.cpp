// The admission webhook's AdmissionReview bodies (v1 and v1beta1), through the path its HTTP
// server takes (scheduler/request_body.h: RunAdmission, JSON parsed within
// codec::kKubeObjectJson). Properties: every answer is 200 or 400; a 200 answer carries a
// response, whose patch, when there is one, is valid base64; a review over the limits whose uid
// can be read is denied by that uid.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/codec/base64.h"
#include "core/codec/bounded_json.h"
#include "fake_cluster_api.h"
#include "fuzz_check.h"
#include "scheduler/extender.h"
#include "scheduler/request_body.h"

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  vgpu::scheduler::ExtenderOptions options;
  options.filter_parallelism = 1;
  vgpu::scheduler::ClusterModel model;
  vgpu::scheduler::testing::FakeClusterApi api(&model);
  vgpu::scheduler::SchedulerMetrics metrics;
  vgpu::scheduler::Extender extender(options, model, api, metrics);
  static vgpu::scheduler::DecodeBudget budget;  // one request at a time: always room
  const vgpu::scheduler::VerbResult r =
      vgpu::scheduler::RunAdmission(body, metrics, budget, extender);
  const std::string text = r.Text();
  vgpu::fuzz::Check(r.http_status == 200 || r.http_status == 400, "an answer neither 200 nor 400",
                    text);
  if (r.http_status != 200) return 0;
  const vgpu::Result<json> answer =
      vgpu::codec::ParseJsonWithin(text, vgpu::codec::kKubeObjectJson, "answer");
  vgpu::fuzz::Check(answer.ok() && answer->is_object() && answer->contains("response") &&
                        (*answer)["response"].is_object(),
                    "a 200 answer without a response", text);
  const json& response = (*answer)["response"];
  if (response.contains("patch")) {
    vgpu::fuzz::Check(response["patch"].is_string() &&
                          vgpu::codec::Base64Decode(response["patch"].get<std::string>()).ok(),
                      "a patch that is not base64", text);
  }
  const vgpu::Result<json> review =
      vgpu::codec::ParseJsonWithin(body, vgpu::codec::kKubeObjectJson, "review");
  if (!review.ok() && review.status().code() == vgpu::StatusCode::kResourceExhausted) {
    vgpu::fuzz::Check(response.value("allowed", true) == false &&
                          response.value("uid", "") ==
                              vgpu::codec::FindJsonString(body, {"request", "uid"},
                                                          vgpu::codec::kKubeObjectJson.max_bytes),
                      "a review over the limits answered other than denied by its uid", text);
  }
  return 0;
}
