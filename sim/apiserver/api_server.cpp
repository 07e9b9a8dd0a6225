#include "sim/apiserver/api_server.h"

#include <httplib.h>

#include <deque>
#include <vector>

#include "net/http_listen.h"
#include "sim/apiserver/selectors.h"

namespace vgpu::sim {

using nlohmann::json;

namespace {

struct HttpError {
  int code;
  const char* reason;
};

HttpError ToHttp(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return {404, "NotFound"};
    case StatusCode::kAlreadyExists:
      return {409, "AlreadyExists"};
    case StatusCode::kFailedPrecondition:
      return {409, "Conflict"};
    case StatusCode::kInvalidArgument:
      return {422, "Invalid"};
    case StatusCode::kPermissionDenied:
      return {403, "Forbidden"};
    case StatusCode::kUnavailable:
      return {503, "ServiceUnavailable"};
    default:
      return {500, "InternalError"};
  }
}

const char* ReasonForCode(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 503:
      return "ServiceUnavailable";
    default:
      return "InternalError";
  }
}

json StatusBody(int code, const char* reason, const std::string& message) {
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", reason},
          {"code", code}};
}

void SendStatus(httplib::Response& res, int code, const char* reason, const std::string& message) {
  res.status = code;
  res.set_content(StatusBody(code, reason, message).dump(), "application/json");
}

void SendError(httplib::Response& res, const Status& s) {
  HttpError e = ToHttp(s);
  SendStatus(res, e.code, e.reason, s.message());
}

void SendJson(httplib::Response& res, int code, const json& body) {
  res.status = code;
  res.set_content(body.dump(), "application/json");
}

std::vector<std::string> SplitPath(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start) out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

// A request path resolved to a resource, a namespace, an optional name and subresource.
struct Target {
  const ResourceInfo* resource = nullptr;
  std::string ns;
  std::string name;
  std::string subresource;
};

// /api/v1/... or /apis/<group>/<version>/...
Result<Target> Resolve(const std::string& path) {
  auto seg = SplitPath(path);
  std::string api_version;
  size_t i = 0;
  if (seg.size() >= 2 && seg[0] == "api") {
    api_version = seg[1];
    i = 2;
  } else if (seg.size() >= 3 && seg[0] == "apis") {
    api_version = seg[1] + "/" + seg[2];
    i = 3;
  } else {
    return NotFound("the server could not find the requested resource " + path);
  }
  std::vector<std::string> rest(seg.begin() + static_cast<long>(i), seg.end());
  Target t;
  std::string plural;
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    t.ns = rest[1];
    plural = rest[2];
    if (rest.size() >= 4) t.name = rest[3];
    if (rest.size() == 5) t.subresource = rest[4];
    if (rest.size() > 5)
      return NotFound("the server could not find the requested resource " + path);
  } else if (!rest.empty() && rest.size() <= 3) {
    plural = rest[0];
    if (rest.size() >= 2) t.name = rest[1];
    if (rest.size() == 3) t.subresource = rest[2];
  } else {
    return NotFound("the server could not find the requested resource " + path);
  }
  t.resource = FindResource(api_version, plural);
  if (!t.resource) {
    return NotFound("the server could not find the requested resource " + path);
  }
  if (!t.resource->namespaced && !t.ns.empty()) {
    return NotFound(std::string(t.resource->plural) + " are not namespaced: " + path);
  }
  if (!t.subresource.empty() && t.subresource != "status" &&
      !(t.subresource == "binding" && t.resource->plural == "pods")) {
    return NotFound("unknown subresource " + t.subresource + " of " + std::string(plural));
  }
  return t;
}

struct WatchState {
  const ResourceInfo* resource = nullptr;
  std::string ns;
  Selector labels;
  Selector fields;
  int64_t rv = 0;
  std::deque<std::string> pending;  // initial synthetic ADDED events, or a 410 ERROR event
  bool finish_after_pending = false;
  std::chrono::steady_clock::time_point deadline;
  std::chrono::steady_clock::time_point last_write;
  uint64_t generation = 0;
};

// The disconnect generation when the request this worker thread serves was admitted (the
// pre-routing handler and the route's handler run on the same thread, one request at a time).
thread_local uint64_t t_admitted_generation = 0;

}  // namespace

// Request handling, kept out of the header so that httplib stays an implementation detail.
class ApiHandler {
 public:
  explicit ApiHandler(ApiServer& s) : s_(s) {}

  void Handle(const httplib::Request& req, httplib::Response& res) {
    auto target = Resolve(req.path);
    if (!target.ok()) return SendError(res, target.status());
    const Target& t = *target;
    const ResourceInfo& r = *t.resource;
    bool item = !t.name.empty();
    if (req.method == "GET" && !item) return ListOrWatch(req, res, t);
    if (req.method == "GET") {
      auto text = s_.store_.GetSerialized(r, t.ns, t.name);
      if (!text.ok()) return SendError(res, text.status());
      res.status = 200;
      return res.set_content(*text, "application/json");
    }
    if (req.method == "POST" && t.subresource == "binding") return Bind(req, res, t);
    if (req.method == "POST" && !item) {
      auto body = ParseBody(req, res);
      if (!body) return;
      if (r.namespaced && t.ns.empty()) {
        return SendStatus(res, 405, "MethodNotAllowed",
                          "create " + std::string(r.plural) + " in a namespace path");
      }
      return Reply(res, 201, s_.store_.Create(r, t.ns, std::move(*body)));
    }
    if (req.method == "PUT" && item) {
      auto body = ParseBody(req, res);
      if (!body) return;
      return Reply(res, 200, s_.store_.Update(r, t.ns, t.name, std::move(*body)));
    }
    if (req.method == "PATCH" && item) return Patch(req, res, t);
    if (req.method == "DELETE" && item) return Reply(res, 200, s_.store_.Delete(r, t.ns, t.name));
    SendStatus(res, 405, "MethodNotAllowed", req.method + " is not supported on " + req.path);
  }

 private:
  static void Reply(httplib::Response& res, int code, const Result<json>& r) {
    if (!r.ok()) return SendError(res, r.status());
    SendJson(res, code, *r);
  }

  static std::optional<json> ParseBody(const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded()) {
      SendStatus(res, 400, "BadRequest", "request body is not valid JSON");
      return std::nullopt;
    }
    return body;
  }

  void Bind(const httplib::Request& req, httplib::Response& res, const Target& t) {
    auto body = ParseBody(req, res);
    if (!body) return;
    std::string node;
    if (auto tg = body->find("target"); tg != body->end() && tg->is_object()) {
      node = tg->value("name", "");
    }
    auto r = s_.store_.Bind(t.ns, t.name, node);
    if (!r.ok()) return SendError(res, r.status());
    SendJson(res, 201,
             {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}, {"code", 201}});
  }

  void Patch(const httplib::Request& req, httplib::Response& res, const Target& t) {
    std::string ct = req.get_header_value("Content-Type");
    ct = ct.substr(0, ct.find(';'));
    PatchType type;
    if (ct == "application/merge-patch+json" || ct == "application/strategic-merge-patch+json") {
      type = PatchType::kMerge;
    } else if (ct == "application/json-patch+json") {
      type = PatchType::kJson;
    } else {
      return SendStatus(res, 415, "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types "
                        "include: application/json-patch+json, application/merge-patch+json, "
                        "application/strategic-merge-patch+json; got \"" +
                            ct + "\"");
    }
    auto patch = ParseBody(req, res);
    if (!patch) return;
    Reply(res, 200, s_.store_.Patch(*t.resource, t.ns, t.name, type, *patch));
  }

  void ListOrWatch(const httplib::Request& req, httplib::Response& res, const Target& t) {
    auto labels = Selector::ParseLabels(req.get_param_value("labelSelector"));
    if (!labels.ok()) return SendStatus(res, 400, "BadRequest", labels.status().message());
    auto fields = Selector::ParseFields(req.get_param_value("fieldSelector"));
    if (!fields.ok()) return SendStatus(res, 400, "BadRequest", fields.status().message());
    auto filter = [&](const json& o) { return labels->Matches(o) && fields->Matches(o); };
    std::string watch = req.get_param_value("watch");
    if (watch == "true" || watch == "1") return Watch(req, res, t, *labels, *fields);
    auto list = s_.store_.ListSerialized(*t.resource, t.ns,
                                         labels->empty() && fields->empty()
                                             ? std::function<bool(const json&)>()
                                             : std::function<bool(const json&)>(filter));
    std::string body = "{\"kind\":\"";
    body += t.resource->kind;
    body += "List\",\"apiVersion\":\"";
    body += t.resource->api_version;
    body += "\",\"metadata\":{\"resourceVersion\":\"" + std::to_string(list.rv) + "\"},\"items\":";
    body += list.items;
    body += '}';
    res.status = 200;
    res.set_content(body, "application/json");
  }

  void Watch(const httplib::Request& req, httplib::Response& res, const Target& t,
             const Selector& labels, const Selector& fields) {
    ++s_.watch_requests_;
    auto st = std::make_shared<WatchState>();
    st->resource = t.resource;
    st->ns = t.ns;
    st->labels = labels;
    st->fields = fields;
    st->generation = t_admitted_generation;
    auto now = std::chrono::steady_clock::now();
    st->last_write = now;
    st->deadline = now + std::chrono::hours(24);
    if (std::string ts = req.get_param_value("timeoutSeconds"); !ts.empty()) {
      char* end = nullptr;
      long secs = std::strtol(ts.c_str(), &end, 10);
      if (*end != '\0' || secs < 0) {
        return SendStatus(res, 400, "BadRequest", "timeoutSeconds must be a non-negative integer");
      }
      if (secs > 0) st->deadline = now + std::chrono::seconds(secs);
    }
    std::string rv_text = req.get_param_value("resourceVersion");
    if (rv_text.empty() || rv_text == "0") {
      // Like the real server: synthetic ADDED events for what exists, then changes.
      ListResult list = s_.store_.List(
          *t.resource, t.ns, [&](const json& o) { return labels.Matches(o) && fields.Matches(o); });
      for (auto& o : list.items) {
        st->pending.push_back(json{{"type", "ADDED"}, {"object", std::move(o)}}.dump() + "\n");
      }
      st->rv = list.rv;
    } else {
      char* end = nullptr;
      long long rv = std::strtoll(rv_text.c_str(), &end, 10);
      if (*end != '\0' || rv < 0) {
        return SendStatus(res, 400, "BadRequest",
                          "resourceVersion \"" + rv_text + "\" is not a valid resource version");
      }
      st->rv = rv;
    }
    ++s_.active_watches_;
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json",
        [srv = &s_, st](size_t, httplib::DataSink& sink) {
          return ApiHandler(*srv).Stream(*st, sink);
        },
        [srv = &s_](bool) { --srv->active_watches_; });
  }

  // Called repeatedly by httplib while it returns true; false cuts the connection.
  bool Stream(WatchState& st, httplib::DataSink& sink) {
    auto cut = [&] {
      return s_.stopping_.load() || s_.disconnect_generation_.load() != st.generation;
    };
    if (cut()) return false;
    auto now = std::chrono::steady_clock::now();
    if (!st.pending.empty()) {
      while (!st.pending.empty()) {
        const std::string& line = st.pending.front();
        if (!sink.write(line.data(), line.size())) return false;
        st.pending.pop_front();
      }
      st.last_write = now;
      if (st.finish_after_pending) sink.done();
      return true;
    }
    if (now >= st.deadline) {
      sink.done();
      return true;
    }
    auto wait = std::min<std::chrono::steady_clock::duration>(s_.options_.watch_heartbeat,
                                                              st.deadline - now);
    WatchBatch batch = s_.store_.WaitEvents(
        *st.resource, st.ns, st.rv, std::chrono::duration_cast<std::chrono::milliseconds>(wait));
    if (cut()) return false;
    if (batch.gone) {
      json status = StatusBody(410, "Expired",
                               "too old resource version: " + std::to_string(st.rv) + " (" +
                                   std::to_string(s_.store_.resource_version()) + ")");
      st.pending.push_back(json{{"type", "ERROR"}, {"object", status}}.dump() + "\n");
      st.finish_after_pending = true;
      return true;
    }
    bool wrote = false;
    for (const auto& ev : batch.events) {
      if (!st.labels.Matches(*ev.object) || !st.fields.Matches(*ev.object)) continue;
      if (!sink.write(ev.line->data(), ev.line->size())) return false;
      wrote = true;
    }
    st.rv = batch.next_rv;
    now = std::chrono::steady_clock::now();
    if (wrote) {
      st.last_write = now;
    } else if (now - st.last_write >= s_.options_.watch_heartbeat) {
      // A blank line: harmless to JSON-lines readers, and fails once the peer has gone.
      if (!sink.write("\n", 1)) return false;
      st.last_write = now;
    }
    return true;
  }

  ApiServer& s_;
};

ApiServer::ApiServer(ApiServerOptions options)
    : options_(std::move(options)),
      store_(options_.history_limit),
      http_(std::make_unique<httplib::Server>()) {}

Result<std::unique_ptr<ApiServer>> ApiServer::Start(ApiServerOptions options) {
  std::unique_ptr<ApiServer> s(new ApiServer(std::move(options)));
  s->Route();
  for (const char* ns : {"default", "kube-system"}) {
    auto created =
        s->store_.Create(*FindResource("v1", "namespaces"), "", json{{"metadata", {{"name", ns}}}});
    if (!created.ok()) return created.status();
  }
  Result<int> port = net::StartServing(*s->http_, s->options_.host, s->options_.port,
                                       "simulated API server", s->thread_);
  if (!port.ok()) return port.status();
  s->port_ = *port;
  return s;
}

void ApiServer::Route() {
  int threads = options_.worker_threads;
  // httplib takes ownership of the queue it is given (its API requires a raw pointer).
  http_->new_task_queue = [threads] {
    // NOLINTNEXTLINE(cppcoreguidelines-owning-memory)
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  // Responses go out in several writes; without TCP_NODELAY each request can stall for a
  // delayed ACK (~40 ms).
  http_->set_tcp_nodelay(true);
  http_->set_keep_alive_max_count(100000);
  http_->set_keep_alive_timeout(2);
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    std::lock_guard lock(fail_mu_);
    // Under the failure lock: a request admitted before FailNextRequests() and DisconnectWatches()
    // (in that order) took the generation from before the cut, so its watch is cut too.
    t_admitted_generation = disconnect_generation_.load();
    last_authorization_ = req.get_header_value("Authorization");
    if (fail_next_ > 0) {
      --fail_next_;
      SendStatus(res, fail_code_, ReasonForCode(fail_code_), "injected failure");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (drop_next_ > 0) {
      --drop_next_;
      res.set_chunked_content_provider("application/json",
                                       [](size_t, httplib::DataSink&) { return false; });
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  auto handle = [this](const httplib::Request& req, httplib::Response& res) {
    ApiHandler(*this).Handle(req, res);
  };
  const char* pattern = R"(/.*)";
  http_->Get(pattern, handle);
  http_->Post(pattern, handle);
  http_->Put(pattern, handle);
  http_->Patch(pattern, handle);
  http_->Delete(pattern, handle);
}

ApiServer::~ApiServer() {
  Stop();
}

void ApiServer::Stop() {
  if (stopping_.exchange(true)) return;
  store_.WakeAll();
  http_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string ApiServer::url() const {
  return "http://" + options_.host + ":" + std::to_string(port_);
}

Result<json> ApiServer::Seed(std::string_view plural, json object) {
  const ResourceInfo* r =
      FindResource(plural == "leases" ? "coordination.k8s.io/v1" : "v1", plural);
  if (!r) return InvalidArgument("unknown resource " + std::string(plural));
  std::string ns;
  if (r->namespaced) {
    ns = object["metadata"].value("namespace", "default");
  }
  return store_.Create(*r, ns, std::move(object));
}

Result<json> ApiServer::Get(std::string_view plural, std::string_view ns, std::string_view name) {
  const ResourceInfo* r =
      FindResource(plural == "leases" ? "coordination.k8s.io/v1" : "v1", plural);
  if (!r) return InvalidArgument("unknown resource " + std::string(plural));
  return store_.Get(*r, ns, name);
}

void ApiServer::FailNextRequests(int n, int http_code) {
  std::lock_guard lock(fail_mu_);
  fail_next_ = n;
  fail_code_ = http_code;
}

std::string ApiServer::last_authorization() const {
  std::lock_guard lock(fail_mu_);
  return last_authorization_;
}

void ApiServer::DropNextRequests(int n) {
  std::lock_guard lock(fail_mu_);
  drop_next_ = n;
}

void ApiServer::DisconnectWatches() {
  ++disconnect_generation_;
  store_.WakeAll();
}

}  // namespace vgpu::sim
