#pragma once

// Runs a scenario on a live simulated cluster: the in-process API server, one real device
// plugin per node with fake GPUs and a simulated kubelet, the real extender and webhook over
// HTTP, and a scheduling loop acting as kube-scheduler (admission, then filter -> prioritize ->
// bind; unschedulable pods retried when capacity is freed). Arrivals and durations run on a
// virtual clock, so a run takes as long as the work, not as the scenario's seconds.

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/cluster/request.h"
#include "sim/cluster/run_result.h"
#include "sim/cluster/scenario.h"

namespace vgpu::sim {

// How the extender under test is started for one run (the real vgpu-scheduler library; see
// extender_factory.h). It watches the API server at `api_url` like the deployed one would.
struct ExtenderSetup {
  std::string api_url;
  PolicyPair policy;  // default node / GPU policy
  std::string scheduler_name = "hami-scheduler";
  RequestDefaults defaults;
  // Namespaces with a ResourceQuota in the API server: the extender watches quotas only when
  // there are some, and is ready once its model holds every one of these namespaces' quotas.
  std::vector<std::string> quota_namespaces;
};

class ExtenderHandle {
 public:
  virtual ~ExtenderHandle() = default;  // stops the extender
  virtual std::string url() const = 0;  // "http://127.0.0.1:<port>"
};

using ExtenderFactory =
    std::function<Result<std::unique_ptr<ExtenderHandle>>(const ExtenderSetup& setup)>;

enum class PluginMode {
  kGrpc,       // kubelet <-> plugin over real unix sockets (Registration, ListAndWatch, Allocate)
  kInProcess,  // the same plugin objects, Allocate called directly
  // Only the plugin's Allocate logic (deviceplugin::Allocator) and its inventory encoding: no
  // gRPC server, health or reporter threads per node. For clusters of thousands of nodes.
  kAllocatorOnly,
};

struct RunOptions {
  ExtenderFactory extender;  // required
  PluginMode plugins = PluginMode::kGrpc;
  int kubelet_workers = 4;
  std::string scheduler_name = "hami-scheduler";
  RequestDefaults defaults;
  int max_bind_attempts = 3;
  // Bind on a separate thread while the next pod is filtered (kube-scheduler's async binding):
  // faster, but a decision may not yet see the previous pod's bind, so runs vary slightly.
  bool async_bind = false;  // per scheduling attempt, before the pod waits as unschedulable
  // Called after each scheduling decision and at the end: (pods decided, pods in scenario).
  std::function<void(size_t, size_t)> progress;
  std::chrono::milliseconds startup_timeout{60000};
  bool component_logs = false;  // keep the plugins' and extender's info logs
};

Result<RunResult> RunScenario(const Scenario& scenario, const PolicyPair& policy,
                              const RunOptions& options);

// The Pod object the scenario's pod becomes (before admission): one container with HAMi
// resource limits; the run's policies as annotations unless the pod names its own.
nlohmann::json PodObject(const PodSpec& pod, const PolicyPair& policy);

}  // namespace vgpu::sim
