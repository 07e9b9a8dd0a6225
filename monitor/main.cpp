// vgpu-monitor: the node monitor (HAMi's vGPUmonitor): keeps the containers' shared regions in
// step with the node (host PIDs, GPU sharing, cleanup) and serves /metrics, /api/v1/snapshot and
// /healthz on :9394 (see docs/monitor.md).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/daemon_flags.h"
#include "core/base/go_duration.h"
#include "core/base/listen_address.h"
#include "core/base/log.h"
#include "kube/config.h"
#include "monitor/kube_pod_directory.h"
#include "monitor/node_monitor.h"
#include "monitor/server.h"

namespace {

using namespace vgpu;
using namespace vgpu::monitor;

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) {
  g_stop = 1;
}

// Bad input: exit 2, as flag parsing errors do.
int Usage(const std::string& message) {
  return daemon::BadFlags(message);
}

// Failures of the node or the cluster: exit 1.
int Fail(const std::string& message) {
  log::Error("cannot start", {{"error", message}});
  return 1;
}

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): before any thread starts
  return v != nullptr && *v != 0 ? std::string(v) : fallback;
}

std::string HostName() {
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0) return "";
  return buf.data();
}

// --no-kube: no pod is known (no names on the per-container metrics) and the view is never
// synced, so no directory is ever removed.
class NoPods : public PodDirectory {
 public:
  std::optional<PodIdentity> Find(const std::string&) const override { return std::nullopt; }
  bool Synced() const override { return false; }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "vgpu-monitor: node monitor for vGPU containers (HAMi's vGPUmonitor): host PIDs, GPU "
      "sharing and cleanup of the containers' regions; metrics and the node snapshot on HTTP",
      "vgpu-monitor"};
  std::string node_name = Env("NODE_NAME", "");
  std::string vgpu_dir = Env("HOOK_PATH", "/usr/local/vgpu");
  std::string cleanup_grace_text = Env("HAMI_RESYNC_INTERVAL", "5m");
  const bool grace_from_env = !Env("HAMI_RESYNC_INTERVAL", "").empty();
  std::string kubeconfig;
  bool no_kube = false;
  int64_t tick_ms = 1000;
  daemon::CommonFlags common;
  MonitorServerOptions server;
  NodeMonitorOptions engine;
  app.add_option("--node-name", node_name,
                 "this node's name (default: $NODE_NAME; with --no-kube, the host name)");
  app.add_option("--vgpu-dir", vgpu_dir,
                 "the device plugin's hook directory; regions are under <dir>/containers "
                 "(default: $HOOK_PATH, else /usr/local/vgpu)")
      ->capture_default_str();
  daemon::AddMetricsBindFlag(app, server.metrics_bind,
                             "address of /metrics, /api/v1/snapshot and /healthz (host:port or "
                             ":port; port 0 = any free port, logged at start)");
  app.add_flag("--legacy-metrics", server.legacy_metrics,
               "also export HAMi's pre-v2.9 metric names (HostGPUMemoryUsage, ...)");
  app.add_option("--tick", tick_ms, "ms between two passes over the node's containers")
      ->capture_default_str();
  CLI::Option* grace_option =
      app.add_option("--cleanup-grace", cleanup_grace_text,
                     "a container directory whose pod is gone is removed once unchanged this long, "
                     "Go duration (default: $HAMI_RESYNC_INTERVAL, else 5m)");
  grace_option->capture_default_str();
  daemon::AddKubeconfigFlag(app, kubeconfig);
  app.add_flag("--no-kube", no_kube,
               "run without an API server: no pod names on the metrics and no cleanup");
  app.add_option("--nvml-library", engine.nvml_library,
                 "libnvidia-ml to load for host GPU figures; empty: none")
      ->capture_default_str();
  daemon::AddCommonFlags(app, common, "1 adds the pod view turning stale or in sync");
  if (std::optional<int> exit = daemon::Parse(app, {argv, argv + argc}, common)) return *exit;

  if (tick_ms <= 0) return Usage("--tick must be a positive number of milliseconds");
  Result<std::chrono::nanoseconds> grace = ParseGoDuration(cleanup_grace_text);
  const std::string grace_name =
      grace_option->count() == 0 && grace_from_env ? "HAMI_RESYNC_INTERVAL" : "--cleanup-grace";
  if (!grace.ok()) return Usage(grace_name + ": " + grace.status().message());
  if (grace->count() < 0) return Usage(grace_name + " must not be negative");
  if (Result<ListenAddress> a = ParseListenAddress(server.metrics_bind); !a.ok()) {
    return Usage("--metrics-bind: " + a.status().message());
  }
  if (vgpu_dir.empty()) return Usage("--vgpu-dir must not be empty");
  if (node_name.empty()) {
    if (!no_kube) return Usage("--node-name (or $NODE_NAME) is required unless --no-kube is given");
    node_name = HostName();
  }

  engine.node_name = node_name;
  engine.vgpu_dir = vgpu_dir;
  engine.tick = std::chrono::milliseconds(tick_ms);
  engine.cleanup_grace = std::chrono::ceil<std::chrono::seconds>(*grace);
  // A tick that has not come for this long means a stuck tick thread: /healthz says so, so that a
  // liveness probe restarts the monitor.
  server.stale_after = std::max(std::chrono::milliseconds(30000), 10 * engine.tick);

  // The listener first, so that /healthz answers 503 while the first tick runs.
  std::atomic<NodeMonitor*> running{nullptr};
  Result<std::unique_ptr<MonitorServer>> http =
      MonitorServer::Start(server, [&running]() -> NodeSnapshot {
        NodeMonitor* m = running.load();
        return m != nullptr ? m->Snapshot() : NodeSnapshot{};
      });
  if (!http.ok()) return Fail(http.status().ToString());
  log::Info("listening", {{"address", (*http)->host() + ":" + std::to_string((*http)->port())}});

  std::unique_ptr<kube::Client> client;
  std::unique_ptr<PodDirectory> pods;
  KubePodDirectory* kube_pods = nullptr;
  if (no_kube) {
    pods = std::make_unique<NoPods>();
  } else {
    Result<kube::ClientConfig> kc = kube::DefaultConfig(kubeconfig);
    if (!kc.ok()) return Fail(kc.status().ToString());
    Result<std::unique_ptr<kube::Client>> c = kube::Client::New(*kc);
    if (!c.ok()) return Fail(c.status().ToString());
    client = std::move(c).value();
    KubePodDirectoryOptions po;
    po.node_name = node_name;
    Result<std::unique_ptr<KubePodDirectory>> d = KubePodDirectory::Start(*client, po);
    if (!d.ok()) return Fail(d.status().ToString());
    kube_pods = d->get();
    // Names on the first metrics; the monitor starts anyway (no cleanup until the list is in).
    if (!kube_pods->WaitForFirstList(std::chrono::seconds(10))) {
      log::Warn("no pod list from the API server yet", {{"error", kube_pods->last_error()}});
    }
    pods = std::move(d).value();
  }

  Result<std::unique_ptr<NodeMonitor>> monitor = NodeMonitor::Start(engine, pods.get());
  if (!monitor.ok()) return Fail(monitor.status().ToString());
  running.store(monitor->get());
  log::Info("running", {{"node", node_name},
                        {"regions", vgpu_dir + "/containers"},
                        {"tick_ms", tick_ms},
                        {"kubernetes", !no_kube}});
  if (no_kube) log::Warn("without Kubernetes: no pod names on the metrics, no cleanup");

  (void)std::signal(SIGINT, OnSignal);
  (void)std::signal(SIGTERM, OnSignal);
  bool synced = pods->Synced();
  while (g_stop == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (kube_pods != nullptr && log::V(1) && kube_pods->Synced() != synced) {
      synced = !synced;
      if (synced) {
        log::Info("pod view in sync again");
      } else {
        log::Info("pod view stale, cleanup paused", {{"error", kube_pods->last_error()}});
      }
    }
  }
  (*http)->Stop();
  running.store(nullptr);
  (*monitor)->Stop();
  if (kube_pods != nullptr) kube_pods->Stop();
  return 0;
}
