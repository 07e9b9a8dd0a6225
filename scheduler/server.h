#pragma once

// HTTP front of the scheduler: the extender verbs (POST /filter, /prioritize, /bind; loopback
// peers only by default), the webhook (POST /webhook), /healthz and /readyz on the plain
// listener; the webhook again on an
// optional HTTPS listener whose certificate and key are reloaded when the files change; and
// /metrics on its own listener (:9395 by default). Each listener is a net::HttpServer: bodies,
// slow and idle clients within net/http_limits.h; /healthz and /readyz answered by its I/O thread,
// so that binds waiting on node locks in every worker do not fail the kubelet's probes.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/base/status.h"
#include "net/http_limits.h"
#include "scheduler/decode_budget.h"
#include "scheduler/extender.h"

namespace vgpu::net {
class HttpServer;
}

namespace vgpu::scheduler {

struct ServerOptions {
  std::string http_bind = "127.0.0.1:0";  // extender + webhook (plain); "" = off
  std::string https_bind;                 // webhook over TLS; "" = off
  bool extender_over_https = false;       // also filter/prioritize/bind there (HAMi's layout)
  // filter/prioritize/bind answer loopback peers only (kube-scheduler beside us, in the same pod
  // or on the same host): /bind posts Bindings with the scheduler's rights, so a pod that could
  // reach it would place pods past kube-scheduler's filters. true: any peer (a kube-scheduler
  // elsewhere; then keep the port away from tenants). docs/security.md.
  bool extender_allow_remote = false;
  std::string tls_cert;
  std::string tls_key;
  std::string metrics_bind = "0.0.0.0:9395";  // "" = off
  bool legacy_metrics = false;
  int worker_threads = 64;              // binds wait on node locks; keep enough threads for them
  net::HttpLimits limits{};             // of every listener: body size, timeouts, connections
  DecodeBudgetOptions decode_budget{};  // JSON held decoded at once, all listeners together
  std::chrono::milliseconds tls_reload_check{2000};
  // Adds a line to the /readyz answer (the leader-election role); unset = none.
  std::function<std::string()> readyz_note;
};

class Server {
 public:
  static Result<std::unique_ptr<Server>> Start(ServerOptions options, Extender& extender,
                                               ClusterModel& model, SchedulerMetrics& metrics);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void Stop();
  void SetReady(bool ready) { ready_.store(ready); }

  int http_port() const { return http_port_; }
  int https_port() const { return https_port_; }
  int metrics_port() const { return metrics_port_; }
  int tls_reloads() const { return tls_reloads_.load(); }
  const DecodeBudget& decode_budget() const { return decode_budget_; }

 private:
  Server(ServerOptions options, Extender& extender, ClusterModel& model, SchedulerMetrics& metrics);
  void RouteApi(net::HttpServer& s, bool webhook_only);
  Status StartHttps();
  Status ReloadTls();
  void WatchTls();

  ServerOptions options_;
  Extender& extender_;
  ClusterModel& model_;
  SchedulerMetrics& metrics_;
  std::atomic<bool> ready_{false};
  DecodeBudget decode_budget_;  // before the listeners, whose handlers use it

  std::unique_ptr<net::HttpServer> http_, metrics_http_, https_;
  int http_port_ = 0, metrics_port_ = 0, https_port_ = 0;

  std::mutex tls_mu_;
  std::thread tls_watch_thread_;
  std::condition_variable tls_cv_;
  bool stopping_ = false;
  std::atomic<int> tls_reloads_{0};
  std::string tls_stamp_;
};

}  // namespace vgpu::scheduler
