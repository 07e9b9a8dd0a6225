#pragma once

// HTTP front of the scheduler: the extender verbs (POST /filter, /prioritize, /bind), the
// webhook (POST /webhook), /healthz and /readyz on the plain listener; the webhook again on an
// optional HTTPS listener whose certificate and key are reloaded when the files change; and
// /metrics on its own listener (:9395 by default).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/base/status.h"
#include "scheduler/extender.h"

namespace httplib {
class Server;
}

namespace vgpu::scheduler {

struct ServerOptions {
  std::string http_bind = "127.0.0.1:0";  // extender + webhook (plain); "" = off
  std::string https_bind;                 // webhook over TLS; "" = off
  bool extender_over_https = false;       // also filter/prioritize/bind there (HAMi's layout)
  std::string tls_cert;
  std::string tls_key;
  std::string metrics_bind = "0.0.0.0:9395";  // "" = off
  bool legacy_metrics = false;
  int worker_threads = 64;  // binds wait on node locks; keep enough threads for them
  std::chrono::milliseconds tls_reload_check{2000};
  // Adds a line to the /readyz answer (the leader-election role); unset = none.
  std::function<std::string()> readyz_note;
};

// "host:port", ":port" (all interfaces) or "port".
Status ParseBindAddress(const std::string& text, std::string& host, int& port);

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

 private:
  Server(ServerOptions options, Extender& extender, ClusterModel& model, SchedulerMetrics& metrics);
  void RouteApi(httplib::Server& s, bool webhook_only);
  Status StartHttps();
  void WatchTls();

  ServerOptions options_;
  Extender& extender_;
  ClusterModel& model_;
  SchedulerMetrics& metrics_;
  std::atomic<bool> ready_{false};

  std::unique_ptr<httplib::Server> http_, metrics_http_;
  std::thread http_thread_, metrics_thread_;
  int http_port_ = 0, metrics_port_ = 0, https_port_ = 0;

  std::mutex tls_mu_;
  std::unique_ptr<httplib::Server> https_;
  std::thread https_thread_;
  std::thread tls_watch_thread_;
  std::condition_variable tls_cv_;
  bool stopping_ = false;
  std::atomic<int> tls_reloads_{0};
  std::string tls_stamp_;
};

}  // namespace vgpu::scheduler
