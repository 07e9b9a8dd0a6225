#include "monitor/server.h"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "core/monitor/flags.h"
#include "core/monitor/metrics.h"
#include "core/monitor/snapshot_json.h"
#include "net/http_listen.h"

namespace vgpu::monitor {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// cpp-httplib binds with SO_REUSEPORT, so a second process on a port in use would share it
// silently (the kernel spreads connections over both, and scrapes reach either). A plain bind
// first reports the port as taken. SO_REUSEADDR keeps a restart from tripping over its own
// TIME_WAIT connections.
Status CheckPortFree(const std::string& host, int port) {
  if (port == 0) return Status::Ok();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) {
    return Status::Ok();  // httplib's bind reports what is wrong with the address
  }
  const int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  int err = 0;
  if (fd >= 0) {
    const int yes = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) err = errno;
    (void)close(fd);
  }
  freeaddrinfo(found);
  if (err == EADDRINUSE) {
    return Unavailable("cannot listen on " + host + ":" + std::to_string(port) +
                       ": the port is in use (another vgpu-monitor?)");
  }
  return Status::Ok();
}

}  // namespace

MonitorServer::MonitorServer(MonitorServerOptions options, SnapshotSource snapshot)
    : options_(std::move(options)), snapshot_(std::move(snapshot)) {}

MonitorServer::~MonitorServer() {
  Stop();
}

void MonitorServer::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<MonitorServer>> MonitorServer::Start(MonitorServerOptions options,
                                                            SnapshotSource snapshot) {
  Result<ListenAddress> address = ParseListenAddress(options.metrics_bind);
  if (!address.ok()) return address.status().WithContext("--metrics-bind");
  std::unique_ptr<MonitorServer> s(new MonitorServer(std::move(options), std::move(snapshot)));
  s->http_ = std::make_unique<httplib::Server>();
  const int threads = s->options_.worker_threads;
  s->http_->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));  // NOLINT: httplib owns it
  };
  s->http_->set_tcp_nodelay(true);
  MonitorServer* self = s.get();

  s->http_->Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    const MetricsOptions o{.legacy = self->options_.legacy_metrics};
    // client_golang's content type for the text format.
    res.set_content(RenderMetrics(self->snapshot_(), NowUnixMs(), o),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  s->http_->Get("/api/v1/snapshot", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(SnapshotToJson(self->snapshot_()), "application/json");
  });
  s->http_->Get("/healthz", [self](const httplib::Request&, httplib::Response& res) {
    const NodeSnapshot snap = self->snapshot_();
    if (snap.time_unix_ms <= 0) {
      res.status = 503;
      res.set_content("waiting for the first tick\n", "text/plain");
      return;
    }
    const int64_t age_ms = NowUnixMs() - snap.time_unix_ms;
    if (self->options_.stale_after.count() > 0 && age_ms > self->options_.stale_after.count()) {
      res.status = 503;
      res.set_content("last tick " + std::to_string(age_ms / 1000) + " s ago\n", "text/plain");
      return;
    }
    res.set_content("ok\n", "text/plain");
  });

  VGPU_RETURN_IF_ERROR(CheckPortFree(address->host, address->port).WithContext("--metrics-bind"));
  Result<int> bound = net::StartServing(*s->http_, address->host, address->port,
                                        "vgpu-monitor listener", s->thread_);
  if (!bound.ok()) return bound.status().WithContext("--metrics-bind");
  // httplib's stop() is lost on a server whose accept loop has not begun yet (the loop then runs
  // forever and Stop() never joins), so Start returns only once it has begun.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!s->http_->is_running() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!s->http_->is_running()) {
    return Internal("the listener on " + s->options_.metrics_bind + " did not start");
  }
  s->host_ = address->host;
  s->port_ = *bound;
  return s;
}

}  // namespace vgpu::monitor
