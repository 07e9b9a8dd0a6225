#include "scheduler/server.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "core/base/listen_address.h"
#include "net/http_server.h"
#include "net/peer_address.h"
#include "net/tls_server_context.h"
#include "scheduler/request_body.h"

namespace vgpu::scheduler {

using nlohmann::json;

namespace {

// Modification stamp of both files; changes when either is rewritten or replaced.
std::string FileStamp(const std::string& a, const std::string& b) {
  std::string out;
  for (const std::string* p : {&a, &b}) {
    struct stat st {};
    if (stat(p->c_str(), &st) != 0) return "";
    out += std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ":" +
           std::to_string(st.st_size) + ":" + std::to_string(st.st_ino) + ";";
  }
  return out;
}

net::HttpResponse Reply(const VerbResult& r) {
  net::HttpResponse res;
  res.status = r.http_status;
  res.content_type = "application/json";
  res.body = r.Text();
  if (r.http_status == 503) res.headers.emplace_back("Retry-After", "1");
  return res;
}

net::HttpResponse Ok() {
  return net::HttpResponse::Text(200, "ok");
}

std::unique_ptr<net::HttpServer> NewServer(const ServerOptions& o, const char* what, int threads,
                                           std::shared_ptr<ssl_ctx_st> tls = nullptr) {
  net::HttpServerOptions h;
  h.what = what;
  h.worker_threads = threads;
  h.limits = o.limits;
  h.tls = std::move(tls);
  return std::make_unique<net::HttpServer>(std::move(h));
}

}  // namespace

Server::Server(ServerOptions options, Extender& extender, ClusterModel& model,
               SchedulerMetrics& metrics)
    : options_(std::move(options)),
      extender_(extender),
      model_(model),
      metrics_(metrics),
      decode_budget_(options_.decode_budget) {}

Server::~Server() {
  Stop();
}

void Server::RouteApi(net::HttpServer& s, bool webhook_only) {
  s.Route("POST", "/webhook", [this](const net::HttpRequest& req) {
    return Reply(RunAdmission(req.body, metrics_, decode_budget_, extender_));
  });
  // The probes: on the I/O thread, so that they answer while binds hold every worker. Liveness
  // says the listener's I/O thread is alive, whatever clients do: restarting never helps against
  // a client, and would hand one a way to kill the pod (and, with failurePolicy Ignore, to have
  // pods admitted unchecked while it restarts). Readiness says whether a request would be served.
  s.Route(
      "GET", "/healthz", [](const net::HttpRequest&) { return Ok(); }, net::RunOn::kIoThread);
  if (webhook_only) return;
  // The verbs read the whole cluster's GPU use and /bind writes Bindings: kube-scheduler's only.
  const auto verb = [this](const char* path, VerbResult (Extender::*call)(const json&)) {
    return [this, path, call](const net::HttpRequest& req) {
      if (!options_.extender_allow_remote && !net::IsLoopbackAddress(req.remote_addr)) {
        return Reply({403, json{{"error", std::string("vgpu-scheduler answers ") + path +
                                              " only to kube-scheduler on its own host (127.0.0.1, "
                                              "::1); this request came from " +
                                              req.remote_addr +
                                              ". Point kube-scheduler's extender urlPrefix at "
                                              "127.0.0.1, or start vgpu-scheduler with "
                                              "--extender-allow-remote (docs/security.md)"}}});
      }
      return Reply(RunJsonVerb(req.body, metrics_, decode_budget_,
                               [this, call](const json& b) { return (extender_.*call)(b); }));
    };
  };
  s.Route("POST", "/filter", verb("/filter", &Extender::Filter));
  s.Route("POST", "/prioritize", verb("/prioritize", &Extender::Prioritize));
  s.Route("POST", "/bind", verb("/bind", &Extender::Bind));
  s.Route("POST", "/preempt", verb("/preempt", &Extender::Preempt));
  // On the I/O thread too: readyz_note takes the elector's mutex, which is never held over I/O.
  s.Route(
      "GET", "/readyz",
      [this, &s](const net::HttpRequest&) {
        bool ready = ready_.load();
        // A standby replica is ready too: it serves filter, prioritize and the webhook; only
        // bind needs the leader, and a readiness that followed leadership would stall rolling
        // updates.
        std::string text = ready ? "ready" : "waiting for the first node and pod lists";
        // Not while the listener refuses requests (every worker busy, the queue full): another
        // replica serves them meanwhile. The per-client limits keep one client from causing it.
        if (const std::string saturated = s.Saturation(); ready && !saturated.empty()) {
          ready = false;
          text = "not taking requests now: " + saturated;
        }
        if (options_.readyz_note) text += "\n" + options_.readyz_note();
        return net::HttpResponse::Text(ready ? 200 : 503, std::move(text));
      },
      net::RunOn::kIoThread);
}

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options, Extender& extender,
                                              ClusterModel& model, SchedulerMetrics& metrics) {
  std::unique_ptr<Server> s(new Server(std::move(options), extender, model, metrics));
  if (!s->options_.http_bind.empty()) {
    Result<ListenAddress> at = ParseListenAddress(s->options_.http_bind);
    if (!at.ok()) return at.status().WithContext("--http-bind");
    s->http_ =
        NewServer(s->options_, "vgpu-scheduler extender listener", s->options_.worker_threads);
    s->RouteApi(*s->http_, /*webhook_only=*/false);
    Result<int> bound = s->http_->Start(at->host, at->port);
    if (!bound.ok()) return bound.status();
    s->http_port_ = *bound;
  }
  if (!s->options_.metrics_bind.empty()) {
    Result<ListenAddress> at = ParseListenAddress(s->options_.metrics_bind);
    if (!at.ok()) return at.status().WithContext("--metrics-bind");
    s->metrics_http_ = NewServer(s->options_, "vgpu-scheduler metrics listener", 2);
    Server* self = s.get();
    s->metrics_http_->Route("GET", "/metrics", [self](const net::HttpRequest&) {
      net::HttpResponse res;
      res.content_type = "text/plain; version=0.0.4";
      res.body = self->metrics_.Render(self->model_, self->options_.legacy_metrics);
      return res;
    });
    s->metrics_http_->Route(
        "GET", "/healthz", [](const net::HttpRequest&) { return Ok(); }, net::RunOn::kIoThread);
    Result<int> bound = s->metrics_http_->Start(at->host, at->port);
    if (!bound.ok()) return bound.status();
    s->metrics_port_ = *bound;
  }
  if (!s->options_.https_bind.empty()) {
    if (s->options_.tls_cert.empty() || s->options_.tls_key.empty()) {
      return InvalidArgument("--https-bind needs --tls-cert and --tls-key");
    }
    VGPU_RETURN_IF_ERROR(s->StartHttps());
    s->tls_watch_thread_ = std::thread([srv = s.get()] { srv->WatchTls(); });
  }
  return s;
}

// The TLS listener with the files as they are now.
Status Server::StartHttps() {
  Result<ListenAddress> at = ParseListenAddress(options_.https_bind);
  if (!at.ok()) return at.status().WithContext("--https-bind");
  const std::string stamp = FileStamp(options_.tls_cert, options_.tls_key);
  Result<std::shared_ptr<ssl_ctx_st>> ctx =
      net::LoadTlsServerContext(options_.tls_cert, options_.tls_key);
  if (!ctx.ok()) return ctx.status();
  https_ =
      NewServer(options_, "vgpu-scheduler webhook TLS listener", options_.worker_threads, *ctx);
  RouteApi(*https_, /*webhook_only=*/!options_.extender_over_https);
  Result<int> bound = https_->Start(at->host, at->port);
  if (!bound.ok()) return bound.status();
  https_port_ = *bound;
  std::lock_guard lock(tls_mu_);
  tls_stamp_ = stamp;
  return Status::Ok();
}

// A new certificate and key for connections from now on; the listener and the connections open
// keep going. A half-written or half-replaced pair fails the check and changes nothing.
Status Server::ReloadTls() {
  const std::string stamp = FileStamp(options_.tls_cert, options_.tls_key);
  Result<std::shared_ptr<ssl_ctx_st>> ctx =
      net::LoadTlsServerContext(options_.tls_cert, options_.tls_key);
  if (!ctx.ok()) return ctx.status();
  if (FileStamp(options_.tls_cert, options_.tls_key) != stamp) {
    return Unavailable("TLS certificate or key changed while loading; the next check loads it");
  }
  https_->SetTlsContext(*ctx);
  std::lock_guard lock(tls_mu_);
  tls_stamp_ = stamp;
  return Status::Ok();
}

void Server::WatchTls() {
  std::unique_lock lock(tls_mu_);
  while (!stopping_) {
    tls_cv_.wait_for(lock, options_.tls_reload_check);
    if (stopping_) break;
    const std::string stamp = FileStamp(options_.tls_cert, options_.tls_key);
    if (stamp.empty() || stamp == tls_stamp_) continue;
    lock.unlock();
    if (ReloadTls().ok()) tls_reloads_.fetch_add(1);
    lock.lock();
  }
}

void Server::Stop() {
  {
    std::lock_guard lock(tls_mu_);
    stopping_ = true;
  }
  tls_cv_.notify_all();
  if (tls_watch_thread_.joinable()) tls_watch_thread_.join();
  if (https_) https_->Stop();
  if (http_) http_->Stop();
  if (metrics_http_) metrics_http_->Stop();
}

}  // namespace vgpu::scheduler
