// The scheduler extender's request bodies, as its HTTP server hands them over
// (scheduler/server.cpp: JSON parsed without exceptions, the verb called, a std::exception answered
// with 400), and the objects its watches feed into the cluster model (no such net there: a throw
// would end the watch). The first byte picks what the rest is:
//   'f' filter, 'p' prioritize, 'b' bind (ExtenderArgs / ExtenderBindingArgs),
//   'n' a Node, 'o' a Pod, 'q' a ResourceQuota from a watch, then a filter of a fixed pod.
// Each input runs against a fresh two-node cluster with one pending pod.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fake_cluster_api.h"
#include "scheduler/extender.h"
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

// As scheduler/server.cpp's Handle: a verb may throw std::exception on a JSON type surprise.
template <typename Verb>
void Serve(Verb verb) {
  try {
    const VerbResult r = verb();
    (void)r.Text();
  } catch (const std::exception&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char what = static_cast<char>(data[0]);
  const json body = json::parse(data + 1, data + size, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;  // the server answers 400 before any verb

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

  switch (what) {
    case 'p':
      Serve([&] { return extender.Prioritize(body); });
      break;
    case 'b':
      Serve([&] { return extender.Filter(fixed_filter); });
      Serve([&] { return extender.Bind(body); });
      break;
    case 'n':
      model.UpsertNode(body);
      Serve([&] { return extender.Filter(fixed_filter); });
      break;
    case 'o':
      model.UpsertPod(body);
      Serve([&] { return extender.Filter(fixed_filter); });
      break;
    case 'q':
      model.UpsertQuota(body);
      Serve([&] { return extender.Filter(fixed_filter); });
      break;
    default:
      Serve([&] { return extender.Filter(body); });
      Serve([&] { return extender.Prioritize(body); });
      break;
  }
  return 0;
}
