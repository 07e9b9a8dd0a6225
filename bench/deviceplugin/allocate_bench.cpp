// Allocate latency including its API calls: kubelet's gRPC Allocate on the plugin's unix socket,
// the plugin reading the node lock and the node's pods and writing the pod and the node back
// through the REST client, against the in-process API server. The node holds 100 other pods
// (kubelet's default pod limit is 110). Reports p50/p99/max in microseconds as counters.

#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "api.grpc.pb.h"
#include "deviceplugin/fake_gpus.h"
#include "deviceplugin/kube_cluster_api.h"
#include "deviceplugin/plugin.h"
#include "kube/config.h"
#include "sim/apiserver/api_server.h"

namespace {
namespace fs = std::filesystem;
using namespace vgpu;
using namespace vgpu::deviceplugin;

nlohmann::json Pod(const std::string& name, const std::string& phase, const std::string& bind) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"annotations",
             {{"hami.io/bind-phase", bind},
              {"hami.io/vgpu-node", "n1"},
              {"hami.io/bind-time", "100"},
              {"hami.io/vgpu-devices-to-allocate", "GPU-b,NVIDIA,3000,30:;"},
              {"hami.io/vgpu-devices-allocated", "GPU-b,NVIDIA,3000,30:;"}}}}},
          // What the scheduler placed: Allocate checks the device list against it.
          {"spec",
           {{"nodeName", "n1"},
            {"containers",
             {{{"name", "main"},
               {"resources",
                {{"limits",
                  {{"nvidia.com/gpu", "1"},
                   {"nvidia.com/gpumem", "3000"},
                   {"nvidia.com/gpucores", "30"}}}}}}}}}},
          {"status", {{"phase", phase}}}};
}

void BM_AllocateWithApiCalls(benchmark::State& state) {
  const fs::path dir = fs::temp_directory_path() / ("vgpu-dp-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto api = sim::ApiServer::Start();
  if (!api.ok()) {
    state.SkipWithError(api.status().ToString().c_str());
    return;
  }
  (void)(*api)->Seed("nodes", {{"metadata", {{"name", "n1"}}}});
  for (int i = 0; i < 100; ++i)
    (void)(*api)->Seed("pods", Pod("bg-" + std::to_string(i), "Running", "success"));

  kube::ClientConfig cfg;
  cfg.server = (*api)->url();
  cfg.qps = 0;  // measure the plugin, not the client-side limiter
  auto client = kube::Client::New(cfg);
  if (!client.ok()) {
    state.SkipWithError(client.status().ToString().c_str());
    return;
  }
  PluginOptions o;
  o.node_name = "n1";
  o.device_plugin_path = dir.string();
  o.register_with_kubelet = false;
  o.install_hook = false;
  o.response.hook_path = (dir / "hook").string();
  o.report_interval = std::chrono::hours(1);
  DevicePlugin plugin(
      o, std::make_unique<KubeClusterApi>(std::shared_ptr<kube::Client>(std::move(*client))),
      std::make_unique<FakeGpuBackend>(*ParseFakeGpus("uuids=GPU-a;GPU-b", "n1")));
  if (Status s = plugin.Start(); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix://" + plugin.SocketPath(), grpc::InsecureChannelCredentials()));
  const auto* nodes = sim::FindResource("v1", "nodes");
  const auto* pods = sim::FindResource("v1", "pods");

  std::vector<double> micros;
  int64_t n = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string name = "p-" + std::to_string(n++);
    (void)(*api)->Seed("pods", Pod(name, "Pending", "allocating"));
    (void)(*api)->store().Patch(
        *nodes, "", "n1", sim::PatchType::kMerge,
        {{"metadata",
          {{"annotations", {{"hami.io/mutex.lock", "2026-11-21T20:00:00Z,default," + name}}}}}});
    v1beta1::AllocateRequest req;
    req.add_container_requests()->add_devices_ids("GPU-b-3");
    v1beta1::AllocateResponse resp;
    grpc::ClientContext ctx;
    state.ResumeTiming();

    auto t0 = std::chrono::steady_clock::now();
    grpc::Status s = stub->Allocate(&ctx, req, &resp);
    auto t1 = std::chrono::steady_clock::now();

    state.PauseTiming();
    if (!s.ok()) {
      state.SkipWithError(s.error_message().c_str());
      break;
    }
    micros.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    (void)(*api)->store().Delete(*pods, "default", name);
    state.ResumeTiming();
  }
  if (!micros.empty()) {
    std::sort(micros.begin(), micros.end());
    auto pct = [&](double p) {
      return micros[std::min(micros.size() - 1,
                             static_cast<size_t>(p * static_cast<double>(micros.size())))];
    };
    state.counters["p50_us"] = pct(0.50);
    state.counters["p99_us"] = pct(0.99);
    state.counters["max_us"] = micros.back();
  }
  plugin.Stop();
  (*api)->Stop();
  fs::remove_all(dir);
}
BENCHMARK(BM_AllocateWithApiCalls)->Iterations(2000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
