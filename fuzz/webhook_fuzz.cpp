// The admission webhook's AdmissionReview bodies (v1 and v1beta1), as scheduler/server.cpp hands
// them to Extender::Admit: parsed without exceptions, a std::exception answered with 400. A
// review that is answered carries a response whose patch, when there is one, is valid base64.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>

#include "fake_cluster_api.h"
#include "fuzz_check.h"
#include "scheduler/extender.h"

using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const json review = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return 0;
  vgpu::scheduler::ExtenderOptions options;
  options.filter_parallelism = 1;
  vgpu::scheduler::ClusterModel model;
  vgpu::scheduler::testing::FakeClusterApi api(&model);
  vgpu::scheduler::SchedulerMetrics metrics;
  vgpu::scheduler::Extender extender(options, model, api, metrics);
  try {
    const vgpu::scheduler::VerbResult r = extender.Admit(review);
    const std::string text = r.Text();
    if (r.http_status == 200) {
      const json answer = json::parse(text, nullptr, false);
      vgpu::fuzz::Check(answer.is_object() && answer.contains("response"),
                        "a 200 answer without a response", text);
    }
  } catch (const std::exception&) {
  }
  return 0;
}
