#include "scheduler/server.h"

#include <httplib.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "net/http_listen.h"
#include "net/tls_pair.h"

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

void Reply(httplib::Response& res, const VerbResult& r) {
  res.status = r.http_status;
  res.set_content(r.Text(), "application/json");
}

template <typename Verb>
void Handle(const httplib::Request& req, httplib::Response& res, SchedulerMetrics& metrics,
            Verb verb) {
  json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    metrics.bad_requests.fetch_add(1, std::memory_order_relaxed);
    Reply(res, {400, json{{"error", "request body is not valid JSON"}}});
    return;
  }
  try {
    Reply(res, verb(body));
  } catch (const std::exception& e) {
    // JSON type surprises deep in an object must not take the scheduler down.
    metrics.bad_requests.fetch_add(1, std::memory_order_relaxed);
    Reply(res, {400, json{{"error", std::string("malformed request: ") + e.what()}}});
  }
}

std::unique_ptr<httplib::Server> NewPlainServer(int threads) {
  auto s = std::make_unique<httplib::Server>();
  s->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));  // NOLINT: httplib owns it
  };
  s->set_payload_max_length(64 << 20);
  s->set_tcp_nodelay(true);  // small answers: without it Nagle + delayed ACK add ~40 ms each
  return s;
}

}  // namespace

Status ParseBindAddress(const std::string& text, std::string& host, int& port) {
  const size_t colon = text.rfind(':');
  std::string port_text = colon == std::string::npos ? text : text.substr(colon + 1);
  host = colon == std::string::npos ? "0.0.0.0" : text.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  try {
    size_t used = 0;
    port = std::stoi(port_text, &used);
    if (used != port_text.size() || port < 0 || port > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    return InvalidArgument("bind address \"" + text +
                           "\" needs a port 0..65535 (host:port or :port)");
  }
  return Status::Ok();
}

Server::Server(ServerOptions options, Extender& extender, ClusterModel& model,
               SchedulerMetrics& metrics)
    : options_(std::move(options)), extender_(extender), model_(model), metrics_(metrics) {}

Server::~Server() {
  Stop();
}

void Server::RouteApi(httplib::Server& s, bool webhook_only) {
  s.Post("/webhook", [this](const httplib::Request& req, httplib::Response& res) {
    Handle(req, res, metrics_, [this](const json& b) { return extender_.Admit(b); });
  });
  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  if (webhook_only) return;
  s.Post("/filter", [this](const httplib::Request& req, httplib::Response& res) {
    Handle(req, res, metrics_, [this](const json& b) { return extender_.Filter(b); });
  });
  s.Post("/prioritize", [this](const httplib::Request& req, httplib::Response& res) {
    Handle(req, res, metrics_, [this](const json& b) { return extender_.Prioritize(b); });
  });
  s.Post("/bind", [this](const httplib::Request& req, httplib::Response& res) {
    Handle(req, res, metrics_, [this](const json& b) { return extender_.Bind(b); });
  });
  s.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = ready_.load();
    res.status = ready ? 200 : 503;
    // A standby replica is ready too: it serves filter, prioritize and the webhook; only bind
    // needs the leader, and a readiness that followed leadership would stall rolling updates.
    std::string text = ready ? "ready\n" : "waiting for the first node and pod lists\n";
    if (options_.readyz_note) text += options_.readyz_note() + "\n";
    res.set_content(text, "text/plain");
  });
}

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options, Extender& extender,
                                              ClusterModel& model, SchedulerMetrics& metrics) {
  std::unique_ptr<Server> s(new Server(std::move(options), extender, model, metrics));
  if (!s->options_.http_bind.empty()) {
    std::string host;
    int port = 0;
    VGPU_RETURN_IF_ERROR(ParseBindAddress(s->options_.http_bind, host, port));
    s->http_ = NewPlainServer(s->options_.worker_threads);
    s->RouteApi(*s->http_, /*webhook_only=*/false);
    Result<int> bound = net::StartServing(*s->http_, host, port, "vgpu-scheduler extender listener",
                                          s->http_thread_);
    if (!bound.ok()) {
      return bound.status();
    }
    s->http_port_ = *bound;
  }
  if (!s->options_.metrics_bind.empty()) {
    std::string host;
    int port = 0;
    VGPU_RETURN_IF_ERROR(ParseBindAddress(s->options_.metrics_bind, host, port));
    s->metrics_http_ = NewPlainServer(2);
    Server* self = s.get();
    s->metrics_http_->Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
      res.set_content(self->metrics_.Render(self->model_, self->options_.legacy_metrics),
                      "text/plain; version=0.0.4");
    });
    s->metrics_http_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    Result<int> bound = net::StartServing(*s->metrics_http_, host, port,
                                          "vgpu-scheduler metrics listener", s->metrics_thread_);
    if (!bound.ok()) {
      return bound.status();
    }
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

// Starts (or restarts, on the same port) the TLS listener with the files as they are now.
Status Server::StartHttps() {
  std::string host;
  int port = 0;
  VGPU_RETURN_IF_ERROR(ParseBindAddress(options_.https_bind, host, port));
  const std::string stamp = FileStamp(options_.tls_cert, options_.tls_key);
  VGPU_RETURN_IF_ERROR(net::CheckTlsPair(options_.tls_cert, options_.tls_key));
  auto next =
      std::make_unique<httplib::SSLServer>(options_.tls_cert.c_str(), options_.tls_key.c_str());
  if (!next->is_valid()) {
    return InvalidArgument("cannot load TLS certificate " + options_.tls_cert + " and key " +
                           options_.tls_key + " (missing, unreadable or not a matching pair)");
  }
  if (FileStamp(options_.tls_cert, options_.tls_key) != stamp) {
    return Unavailable("TLS certificate or key changed while loading; the next check loads it");
  }
  const int threads = options_.worker_threads;
  next->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));  // NOLINT: httplib owns it
  };
  RouteApi(*next, /*webhook_only=*/!options_.extender_over_https);
  std::lock_guard lock(tls_mu_);
  if (https_) {
    // Same port again: the old listener must close first.
    port = https_port_;
    https_->stop();
    if (https_thread_.joinable()) https_thread_.join();
    https_.reset();
  }
  const char* what = "vgpu-scheduler webhook TLS listener";
  Result<int> bound = net::StartServing(*next, host, port, what, https_thread_);
  for (int attempt = 0; !bound.ok() && attempt < 50 && port != 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    bound = net::StartServing(*next, host, port, what, https_thread_);
  }
  if (!bound.ok()) {
    return bound.status();
  }
  https_port_ = *bound;
  https_ = std::move(next);
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
    // A half-written or half-replaced pair fails the check; the old listener keeps serving until
    // the new pair is whole.
    if (StartHttps().ok()) tls_reloads_.fetch_add(1);
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
  {
    std::lock_guard lock(tls_mu_);
    if (https_) https_->stop();
  }
  if (https_thread_.joinable()) https_thread_.join();
  if (http_) http_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  if (metrics_http_) metrics_http_->stop();
  if (metrics_thread_.joinable()) metrics_thread_.join();
}

}  // namespace vgpu::scheduler
