#include "monitor/server.h"

#include <chrono>

#include "core/base/listen_address.h"
#include "core/monitor/metrics.h"
#include "core/monitor/snapshot_json.h"
#include "net/http_server.h"

namespace vgpu::monitor {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

MonitorServer::MonitorServer(MonitorServerOptions options, SnapshotSource snapshot)
    : options_(std::move(options)), snapshot_(std::move(snapshot)) {}

MonitorServer::~MonitorServer() {
  Stop();
}

void MonitorServer::Stop() {
  if (http_) http_->Stop();
}

Result<std::unique_ptr<MonitorServer>> MonitorServer::Start(MonitorServerOptions options,
                                                            SnapshotSource snapshot) {
  Result<ListenAddress> address = ParseListenAddress(options.metrics_bind);
  if (!address.ok()) return address.status().WithContext("--metrics-bind");
  std::unique_ptr<MonitorServer> s(new MonitorServer(std::move(options), std::move(snapshot)));
  net::HttpServerOptions http;
  http.what = "vgpu-monitor listener";
  http.worker_threads = s->options_.worker_threads;
  http.limits = s->options_.limits;
  s->http_ = std::make_unique<net::HttpServer>(std::move(http));
  MonitorServer* self = s.get();

  s->http_->Route("GET", "/metrics", [self](const net::HttpRequest&) {
    const MetricsOptions o{.legacy = self->options_.legacy_metrics};
    net::HttpResponse res;
    // client_golang's content type for the text format.
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.body = RenderMetrics(self->snapshot_(), NowUnixMs(), o);
    return res;
  });
  s->http_->Route("GET", "/api/v1/snapshot", [self](const net::HttpRequest&) {
    net::HttpResponse res;
    res.content_type = "application/json";
    res.body = SnapshotToJson(self->snapshot_());
    return res;
  });
  // On the I/O thread: the liveness probe answers while scrapes hold the workers. The snapshot
  // is copied under a mutex the tick holds only to swap in the next one.
  s->http_->Route(
      "GET", "/healthz",
      [self](const net::HttpRequest&) {
        const NodeSnapshot snap = self->snapshot_();
        if (snap.time_unix_ms <= 0)
          return net::HttpResponse::Text(503, "waiting for the first tick");
        const int64_t age_ms = NowUnixMs() - snap.time_unix_ms;
        if (self->options_.stale_after.count() > 0 && age_ms > self->options_.stale_after.count()) {
          return net::HttpResponse::Text(503,
                                         "last tick " + std::to_string(age_ms / 1000) + " s ago");
        }
        return net::HttpResponse::Text(200, "ok");
      },
      net::RunOn::kIoThread);

  // No SO_REUSEPORT (net/tcp_listener.h): a second vgpu-monitor on the port is an error here,
  // not a silent share of the scrapes.
  Result<int> bound = s->http_->Start(address->host, address->port);
  if (!bound.ok()) return bound.status().WithContext("--metrics-bind");
  s->host_ = address->host;
  s->port_ = *bound;
  return s;
}

}  // namespace vgpu::monitor
