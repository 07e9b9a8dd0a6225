// vgpu-scheduler: the kube-scheduler extender and admission webhook (see docs/scheduler.md).

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "core/base/daemon_flags.h"
#include "core/base/log.h"
#include "core/config/config_files.h"
#include "core/sched/leader_election.h"
#include "core/sched/policy.h"
#include "kube/config.h"
#include "scheduler/options.h"
#include "scheduler/scheduler_service.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) {
  g_stop = 1;
}

int Fail(const std::string& message) {
  vgpu::log::Error("cannot start", {{"error", message}});
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vgpu;
  CLI::App app{
      "vgpu-scheduler: kube-scheduler extender (filter/prioritize/bind) and admission "
      "webhook for vGPU pods, HAMi-compatible"};
  std::string kubeconfig, device_config, node_policy = "binpack", gpu_policy = "spread";
  scheduler::AccessFlags access;
  scheduler::ExtenderOptions ext;
  int64_t lock_timeout_ms = scheduler::NodeLockOptions{}.wait_timeout.count(), lock_expiry_s = 60,
          handshake_timeout_s = 60;
  int64_t default_mem = -1, default_cores = -1, default_gpu_num = -1;
  bool no_quota_watch = false, no_handshake = false;
  daemon::AddKubeconfigFlag(app, kubeconfig);
  scheduler::AddAccessFlags(app, access);  // listeners and the webhook's overrides
  bool force_overwrite = true, enable_ascend = false, enable_iluvatar = false;
  std::string node_label_selector;
  daemon::CommonFlags common{.verbosity = 1};
  app.add_option("--force-overwrite-default-scheduler", force_overwrite,
                 "HAMi's flag; only true (the webhook sets the scheduler name of vGPU pods) is "
                 "supported")
      ->capture_default_str();
  app.add_option("--enable-ascend", enable_ascend, "HAMi's flag; vgpu schedules NVIDIA GPUs only");
  app.add_option("--enable-iluvatar", enable_iluvatar,
                 "HAMi's flag; vgpu schedules NVIDIA GPUs only");
  app.add_option("--node-label-selector", node_label_selector,
                 "HAMi's flag; not supported (nodes are chosen by their inventory annotation)");
  daemon::AddCommonFlags(app, common,
                         "0 warnings and lifecycle, 1 every bind, 2 binds of pods without GPUs");
  app.add_option("--scheduler-name", ext.scheduler_name,
                 "schedulerName the webhook sets on vGPU pods")
      ->capture_default_str();
  app.add_option("--device-config,--device-config-file", device_config,
                 "device-config.yaml (resource names, defaults, gpuCorePolicy)");
  app.add_option("--node-scheduler-policy", node_policy, "default node policy: binpack or spread")
      ->capture_default_str();
  app.add_option("--gpu-scheduler-policy", gpu_policy,
                 "default GPU policy: binpack, spread, topology-aware, numa, mutex or a "
                 "comma-separated combination such as binpack,mutex (hami.io/gpu-scheduler-policy)")
      ->capture_default_str();
  app.add_flag("--legacy-metrics", access.server.legacy_metrics,
               "export HAMi's pre-v2.9 metric names in place of the hami_* ones");
  app.add_option("--node-lock-timeout", lock_timeout_ms,
                 "ms a bind waits for a node lock held by another pod; keep it well under "
                 "kube-scheduler's extender httpTimeout (30 s)")
      ->capture_default_str();
  app.add_option("--node-lock-expiry", lock_expiry_s,
                 "seconds after which a node lock is taken over even if its owner is still "
                 "allocating (HAMi: 300)")
      ->capture_default_str();
  app.add_option("--handshake-timeout", handshake_timeout_s,
                 "seconds a device plugin may leave the handshake unanswered")
      ->capture_default_str();
  app.add_flag("--no-handshake", no_handshake,
               "ignore hami.io/node-handshake (every registered node is alive)");
  app.add_option("--default-mem", default_mem,
                 "MiB per vGPU when a pod gives none (0 = whole card; default from device config)");
  app.add_option("--default-cores", default_cores,
                 "percent of SMs per vGPU when a pod gives none (default from device config)");
  app.add_option("--default-gpu-num", default_gpu_num,
                 "vGPUs when a pod asks only memory or cores (default from device config)");
  app.add_flag("--no-quota-watch", no_quota_watch,
               "do not watch ResourceQuotas (API servers without them)");
  // Leader election, with kube-scheduler's flag spellings (HAMi's chart passes the first three).
  bool leader_elect = false;
  std::string le_name = "vgpu-scheduler", le_namespace, le_lock = "leases", le_follow;
  std::string le_lease = "15s", le_renew = "10s", le_retry = "2s";
  app.add_flag("--leader-elect", leader_elect,
               "run several replicas: only the one holding the Lease binds "
               "(--leader-elect or --leader-elect=true|false)");
  app.add_option("--leader-elect-resource-name", le_name,
                 "name of vgpu-scheduler's own Lease; not kube-scheduler's")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-namespace", le_namespace,
                 "namespace of the Leases (default: $POD_NAMESPACE, else kube-system)");
  app.add_option("--leader-elect-resource-lock", le_lock, "lock kind; only leases")
      ->capture_default_str();
  app.add_option("--leader-elect-lease-duration", le_lease,
                 "how long others wait after the leader's last renewal before taking over")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", le_renew,
                 "the leader stops binding when it could not renew for this long")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", le_retry,
                 "time between two attempts to acquire or renew")
      ->capture_default_str();
  app.add_option("--leader-elect-kube-scheduler-lease", le_follow,
                 "kube-scheduler's Lease in the same namespace: stand by while another pod's "
                 "kube-scheduler holds it (default: the --scheduler-name value; \"none\" = off)");
  if (std::optional<int> exit = daemon::Parse(app, {argv, argv + argc}, common)) return *exit;
  if (!force_overwrite)
    return daemon::BadFlags(
        "--force-overwrite-default-scheduler=false is not supported: the webhook always "
        "sets the scheduler name of pods that ask for vGPU resources");
  if (enable_ascend || enable_iluvatar)
    return daemon::BadFlags(
        "--enable-ascend/--enable-iluvatar: vgpu schedules NVIDIA GPUs only; leave them "
        "false");
  if (!node_label_selector.empty())
    return daemon::BadFlags(
        "--node-label-selector is not supported: GPU nodes are the nodes whose device "
        "plugin registered an inventory");
  Result<scheduler::Access> reach = scheduler::ResolveAccess(access);
  if (!reach.ok()) return daemon::BadFlags(reach.status().message());
  const scheduler::ServerOptions& server = reach->server;
  ext.overrides = reach->overrides;
  ext.system_users = reach->system_users;
  ext.webhook_mode = reach->webhook_mode;
  if (ext.webhook_mode == sched::WebhookMode::kAudit) {
    log::Warn(
        "webhook in audit mode: pods its checks refuse are admitted with a warning and counted "
        "in vgpu_scheduler_webhook_would_deny_total; switch to --webhook-mode=enforce once that "
        "stays at 0");
  }

  config::NvidiaConfig nvidia;
  if (!device_config.empty()) {
    Result<config::NvidiaConfig> c = config::LoadDeviceConfigFile(device_config);
    if (!c.ok()) return Fail(c.status().ToString());
    nvidia = *c;
  }
  ext.names = nvidia.resource_names();
  ext.defaults.mem_mib = default_mem >= 0 ? default_mem : nvidia.default_memory;
  ext.defaults.cores = static_cast<int>(default_cores >= 0 ? default_cores : nvidia.default_cores);
  ext.defaults.gpu_num =
      static_cast<int>(default_gpu_num >= 0 ? default_gpu_num : nvidia.default_gpu_num);
  ext.core_policy =
      nvidia.disable_core_limit ? std::string(config::kCorePolicyDisable) : nvidia.gpu_core_policy;
  Result<sched::NodePolicy> np = sched::ParseNodePolicy(node_policy);
  if (!np.ok()) return daemon::BadFlags("--node-scheduler-policy: " + np.status().message());
  Result<sched::GpuPolicy> gp = sched::ParseGpuPolicy(gpu_policy);
  if (!gp.ok()) return daemon::BadFlags("--gpu-scheduler-policy: " + gp.status().message());
  ext.defaults.node_policy = *np;
  ext.defaults.gpu_policy = *gp;
  ext.lock.wait_timeout = std::chrono::milliseconds(lock_timeout_ms);
  ext.lock.stale_after = std::chrono::seconds(lock_expiry_s);
  ext.handshake_timeout = std::chrono::seconds(handshake_timeout_s);
  ext.check_handshake = !no_handshake;

  scheduler::LeaderElectionOptions le;
  if (leader_elect) {
    le.enabled = true;
    if (le_lock != "leases") {
      return daemon::BadFlags("--leader-elect-resource-lock: only \"leases\" is supported (got \"" +
                              le_lock + "\")");
    }
    const std::pair<const char*, std::string*> durations[] = {
        {"--leader-elect-lease-duration", &le_lease},
        {"--leader-elect-renew-deadline", &le_renew},
        {"--leader-elect-retry-period", &le_retry}};
    std::chrono::milliseconds* fields[] = {&le.timing.lease_duration, &le.timing.renew_deadline,
                                           &le.timing.retry_period};
    for (size_t i = 0; i < 3; ++i) {
      Result<std::chrono::milliseconds> d = sched::ParseFlagDuration(*durations[i].second);
      if (!d.ok()) {
        return daemon::BadFlags(std::string(durations[i].first) + ": " + d.status().message());
      }
      *fields[i] = *d;
    }
    const char* pod_ns = std::getenv("POD_NAMESPACE");
    le.lease_namespace = !le_namespace.empty()                  ? le_namespace
                         : pod_ns != nullptr && *pod_ns != '\0' ? pod_ns
                                                                : "kube-system";
    le.lease_name = le_name;
    const char* pod_name = std::getenv("POD_NAME");
    char host[256] = {};
    if (pod_name != nullptr && *pod_name != '\0') {
      le.pod = pod_name;
    } else if (gethostname(host, sizeof host - 1) == 0) {
      le.pod = host;
    }
    if (le.pod.empty()) return Fail("--leader-elect: set POD_NAME (downward API) or a hostname");
    le.identity = scheduler::NewLeaderIdentity(le.pod);
    le.kube_scheduler_lease = le_follow.empty() ? ext.scheduler_name : le_follow;
    if (le.kube_scheduler_lease == "none") le.kube_scheduler_lease.clear();
    if (Status t = sched::ValidateLeaseTiming(le.timing); !t.ok()) {
      return daemon::BadFlags(t.message());
    }
  }

  Result<kube::ClientConfig> kc = kube::DefaultConfig(kubeconfig);
  if (!kc.ok()) return Fail(kc.status().ToString());
  Result<std::unique_ptr<kube::Client>> client = kube::Client::New(*kc);
  if (!client.ok()) return Fail(client.status().ToString());

  scheduler::SchedulerServiceOptions service_options;
  service_options.leader = le;
  service_options.extender = ext;
  service_options.server = server;
  service_options.feed.watch_quotas = !no_quota_watch;
  service_options.feed.write_handshake = !no_handshake;
  Result<std::unique_ptr<scheduler::SchedulerService>> svc =
      scheduler::SchedulerService::Start(service_options, **client);
  if (!svc.ok()) return Fail(svc.status().ToString());
  if (server.https_bind.empty()) {
    log::Info("serving",
              {{"extender_port", (*svc)->port()}, {"metrics_port", (*svc)->metrics_port()}});
  } else {
    log::Info("serving", {{"extender_port", (*svc)->port()},
                          {"metrics_port", (*svc)->metrics_port()},
                          {"webhook_tls_port", (*svc)->https_port()}});
  }
  (void)std::signal(SIGINT, OnSignal);
  (void)std::signal(SIGTERM, OnSignal);
  while (!g_stop) {
    (*svc)->WaitReady(std::chrono::milliseconds(0));  // refreshes /readyz
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  (*svc)->Stop();
  return 0;
}
