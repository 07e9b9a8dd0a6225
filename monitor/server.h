#pragma once

// HTTP front of the node monitor, one listener (HAMi's :9394):
//   GET /metrics          the metrics page (core/monitor/metrics.h), text format 0.0.4
//   GET /api/v1/snapshot  the node snapshot as JSON (core/monitor/snapshot_json.h; `vgpu top`)
//   GET /healthz          200 once the first tick has run (and, with `stale_after`, while ticks
//                         keep coming), 503 with the reason otherwise
// It reads the monitor through a function, so tests serve a fixed snapshot. The listener is a
// net::HttpServer (limits of net/http_limits.h); /healthz is answered by its I/O thread.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/base/status.h"
#include "core/monitor/snapshot.h"
#include "net/http_limits.h"

namespace vgpu::net {
class HttpServer;
}

namespace vgpu::monitor {

struct MonitorServerOptions {
  std::string metrics_bind = "0.0.0.0:9394";  // host:port, :port; port 0 = any free port
  bool legacy_metrics = false;                // --legacy-metrics: HAMi's old names as well
  // /healthz fails when the last tick is older than this (a stuck tick thread); 0 = never.
  std::chrono::milliseconds stale_after{0};
  int worker_threads = 4;
  net::HttpLimits limits{};
};

class MonitorServer {
 public:
  using SnapshotSource = std::function<NodeSnapshot()>;

  // Binds and serves on a background thread; errors when the address is malformed or taken.
  static Result<std::unique_ptr<MonitorServer>> Start(MonitorServerOptions options,
                                                      SnapshotSource snapshot);
  ~MonitorServer();
  MonitorServer(const MonitorServer&) = delete;
  MonitorServer& operator=(const MonitorServer&) = delete;

  void Stop();
  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  MonitorServer(MonitorServerOptions options, SnapshotSource snapshot);

  MonitorServerOptions options_;
  SnapshotSource snapshot_;
  std::unique_ptr<net::HttpServer> http_;
  std::string host_;
  int port_ = 0;
};

}  // namespace vgpu::monitor
