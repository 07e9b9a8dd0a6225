// Per-pod latency of the extender's three verbs on a large in-memory cluster, in-process (no
// HTTP): what kube-scheduler waits for per pod. The API behind bind is the in-memory fake of
// the tests (its writes feed the model as a watch would); a stand-in device plugin releases
// each node lock outside the timed region.
//
//   build/release-sched/bench/scheduler/scheduler_bench --benchmark_counters_tabular=true

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "fake_cluster_api.h"
#include "scheduler/extender.h"
#include "test_objects.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void BM_FilterPrioritizeBind(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int gpus = static_cast<int>(state.range(1));
  ClusterModel model;
  testing::FakeClusterApi api(&model);
  SchedulerMetrics metrics;
  ExtenderOptions options;
  options.defaults.node_policy = sched::NodePolicy::kSpread;
  Extender ext(options, model, api, metrics);
  std::vector<std::string> names;
  for (int i = 0; i < nodes; ++i) {
    names.push_back("node-" + std::to_string(i));
    api.PutNode(testing::GpuNode(names.back(), gpus, 81920, "NVIDIA H100 80GB HBM3"));
  }
  std::vector<double> latencies, filter_ms, prioritize_ms, bind_ms;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  int64_t i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    json pod = testing::GpuPod(
        "p" + std::to_string(i++),
        {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "4000"}, {"nvidia.com/gpucores", "10"}});
    api.PutPod(pod);
    const json args = testing::FilterArgs(pod, names);
    state.ResumeTiming();

    // Each verb is timed on its own; building the next request from the last answer stands in
    // for kube-scheduler and HTTP and is not counted.
    const auto t0 = Clock::now();
    VerbResult f = ext.Filter(args);
    const auto t1 = Clock::now();
    state.PauseTiming();
    const json prioritize_args = {{"pod", pod}, {"nodenames", f.Json()["nodenames"]}};
    state.ResumeTiming();
    const auto t2 = Clock::now();
    VerbResult p = ext.Prioritize(prioritize_args);
    const auto t3 = Clock::now();
    state.PauseTiming();
    // kube-scheduler picks the best score (first on ties).
    std::string best;
    int best_score = -1;
    for (const json& h : p.Json()) {
      if (h["score"].get<int>() > best_score) {
        best_score = h["score"];
        best = h["host"];
      }
    }
    const json bind_args = testing::BindArgs(pod, best);
    state.ResumeTiming();
    const auto t4 = Clock::now();
    VerbResult b = ext.Bind(bind_args);
    const auto t5 = Clock::now();
    filter_ms.push_back(ms(t0, t1));
    prioritize_ms.push_back(ms(t2, t3));
    bind_ms.push_back(ms(t4, t5));
    latencies.push_back(filter_ms.back() + prioritize_ms.back() + bind_ms.back());

    state.PauseTiming();
    if (b.Json()["error"] != "") state.SkipWithError(b.Json()["error"].get<std::string>().c_str());
    // The device plugin's Allocate: lock released, bind-phase success.
    (void)api.JsonPatchNode(
        best,
        json::array({{{"op", "remove"}, {"path", "/metadata/annotations/hami.io~1mutex.lock"}}}));
    state.ResumeTiming();
  }
  const auto pct = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v.empty()
               ? 0.0
               : v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  state.counters["p50_ms"] = pct(latencies, 0.50);
  state.counters["p99_ms"] = pct(latencies, 0.99);
  state.counters["max_ms"] = pct(latencies, 1.0);
  state.counters["filter_p99_ms"] = pct(filter_ms, 0.99);
  state.counters["prio_p99_ms"] = pct(prioritize_ms, 0.99);
  state.counters["bind_p99_ms"] = pct(bind_ms, 0.99);
  state.counters["candidates"] = nodes;
}
BENCHMARK(BM_FilterPrioritizeBind)
    ->Args({5000, 8})
    ->Args({500, 8})
    ->Iterations(1000)
    ->Unit(benchmark::kMillisecond);

void BM_FilterOnly(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  ClusterModel model;
  testing::FakeClusterApi api(&model);
  SchedulerMetrics metrics;
  Extender ext(ExtenderOptions{}, model, api, metrics);
  std::vector<std::string> names;
  for (int i = 0; i < nodes; ++i) {
    names.push_back("node-" + std::to_string(i));
    api.PutNode(testing::GpuNode(names.back(), 8, 81920));
  }
  const json pod = testing::GpuPod("p", {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "4000"}});
  const json args = testing::FilterArgs(pod, names);
  for (auto _ : state) benchmark::DoNotOptimize(ext.Filter(args));
  state.counters["gpu_checks_per_s"] = benchmark::Counter(
      static_cast<double>(nodes) * 8, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_FilterOnly)->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace vgpu::scheduler

BENCHMARK_MAIN();
