// The scheduler extender's request bodies, through the path its HTTP server takes
// (scheduler/request_body.h: JSON parsed within codec::kKubeObjectJson, the verb called, a
// std::exception answered with 400), and the objects its watches feed into the cluster model,
// parsed within the same limits as kube/watch.cpp does (no net there: a throw would end the
// watch). The first byte picks what the rest is:
//   'f' filter, 'p' prioritize, 'b' bind (ExtenderArgs / ExtenderBindingArgs),
//   'n' a Node, 'o' a Pod, 'q' a ResourceQuota from a watch, then a filter of a fixed pod.
// Each input runs against a fresh two-node cluster with one pending pod.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/codec/bounded_json.h"
#include "fake_cluster_api.h"
#include "fuzz_check.h"
#include "scheduler/extender.h"
#include "scheduler/request_body.h"
#include "test_objects.h"

namespace {

using nlohmann::json;
using vgpu::scheduler::ClusterModel;
using vgpu::scheduler::Extender;
using vgpu::scheduler::ExtenderOptions;
using vgpu::scheduler::SchedulerMetrics;
using vgpu::scheduler::VerbResult;
using vgpu::scheduler::testing::FakeClusterApi;
using vgpu::scheduler::testing::GpuNode;
using vgpu::scheduler::testing::GpuPod;

// The request path of the server, for a body; its answer is JSON whatever the body.
void Serve(std::string_view body, SchedulerMetrics& metrics,
           const vgpu::scheduler::JsonVerb& verb) {
  static vgpu::scheduler::DecodeBudget budget;  // one request at a time: always room
  const VerbResult r = vgpu::scheduler::RunJsonVerb(body, metrics, budget, verb);
  vgpu::fuzz::Check(r.http_status == 200 || r.http_status == 400, "an answer neither 200 nor 400",
                    r.Text());
}

// A verb on a fixed body, where the fuzzed input went into the model instead.
template <typename Verb>
void Call(Verb verb) {
  try {
    (void)verb().Text();
  } catch (const std::exception&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char what = static_cast<char>(data[0]);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  ExtenderOptions options;
  options.filter_parallelism = 1;
  options.lock.wait_timeout = std::chrono::milliseconds(0);
  options.lock.poll_min = std::chrono::milliseconds(0);
  options.lock.poll_max = std::chrono::milliseconds(0);
  ClusterModel model;
  FakeClusterApi api(&model);
  SchedulerMetrics metrics;
  api.PutNode(GpuNode("n1", 2, 24000));
  api.PutNode(GpuNode("n2", 1, 8000));
  const json pod = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}});
  api.PutPod(pod);
  Extender extender(options, model, api, metrics);
  const json fixed_filter = {{"pod", pod}, {"nodenames", {"n1", "n2", "n3"}}};
  const auto watched = [&](auto upsert) {
    vgpu::Result<json> object =
        vgpu::codec::ParseJsonWithin(text, vgpu::codec::kKubeObjectJson, "watch event");
    if (!object.ok()) return;  // kube/watch.cpp skips it
    upsert(*object);
    Call([&] { return extender.Filter(fixed_filter); });
  };

  switch (what) {
    case 'p':
      Serve(text, metrics, [&](const json& b) { return extender.Prioritize(b); });
      break;
    case 'b':
      Call([&] { return extender.Filter(fixed_filter); });
      Serve(text, metrics, [&](const json& b) { return extender.Bind(b); });
      break;
    case 'n':
      watched([&](const json& o) { model.UpsertNode(o); });
      break;
    case 'o':
      watched([&](const json& o) { model.UpsertPod(o); });
      break;
    case 'q':
      watched([&](const json& o) { model.UpsertQuota(o); });
      break;
    default:
      Serve(text, metrics, [&](const json& b) { return extender.Filter(b); });
      Serve(text, metrics, [&](const json& b) { return extender.Prioritize(b); });
      break;
  }
  return 0;
}
