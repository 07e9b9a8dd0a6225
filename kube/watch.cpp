#include "kube/watch.h"

#include "core/codec/bounded_json.h"
#include "kube/client.h"
#include "kube/http_transport.h"

namespace vgpu::kube {

using nlohmann::json;

Watcher::Watcher(Client& client, ResourceType type, std::string ns, WatchOptions options,
                 WatchHandlers handlers)
    : client_(client),
      type_(type),
      ns_(std::move(ns)),
      options_(std::move(options)),
      handlers_(std::move(handlers)),
      cancel_(std::make_unique<StreamCancel>()),
      rv_(options_.resource_version) {}

Watcher::~Watcher() {
  Stop();
}

void Watcher::Stop() {
  stopped_ = true;
  cancel_->Cancel();
  {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

std::string Watcher::resource_version() const {
  std::lock_guard lock(mu_);
  return rv_;
}

void Watcher::SetRv(std::string rv) {
  std::lock_guard lock(mu_);
  rv_ = std::move(rv);
}

void Watcher::Backoff() {
  backoff_ =
      backoff_.count() == 0 ? options_.min_backoff : std::min(options_.max_backoff, backoff_ * 2);
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, backoff_, [&] { return stopped_.load(); });
}

bool Watcher::List() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  auto list = client_.List(type_, ns_, lo);
  if (!list.ok()) {
    if (handlers_.on_error) handlers_.on_error(list.status());
    return false;
  }
  ++lists_;
  std::string rv;
  if (auto m = list->find("metadata"); m != list->end() && m->is_object()) {
    rv = m->value("resourceVersion", "");
  }
  SetRv(rv);
  if (handlers_.on_list) handlers_.on_list(*list);
  return true;
}

bool Watcher::WatchOnce() {
  std::string path = ResourcePath(type_, ns_) + "?watch=true&allowWatchBookmarks=true";
  std::string rv = resource_version();
  if (!rv.empty()) path += "&resourceVersion=" + UrlEncode(rv);
  if (!options_.label_selector.empty()) {
    path += "&labelSelector=" + UrlEncode(options_.label_selector);
  }
  if (!options_.field_selector.empty()) {
    path += "&fieldSelector=" + UrlEncode(options_.field_selector);
  }
  if (options_.timeout_seconds > 0) {
    path += "&timeoutSeconds=" + std::to_string(options_.timeout_seconds);
  }
  bool gone = false;
  bool progressed = false;
  std::string buffer;
  auto on_line = [&](std::string_view line) -> bool {
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) return true;  // heartbeat
    // One event, one object: the API server bounds it, and a tenant wrote much of it.
    Result<json> parsed = codec::ParseJsonWithin(line, codec::kKubeObjectJson, "watch event");
    if (!parsed.ok() && parsed.status().code() != StatusCode::kInvalidArgument) {
      // Skipped, and said: such an object was refused by the webhook and the extender too.
      if (handlers_.on_error) {
        handlers_.on_error(parsed.status().WithContext("watch " + std::string(type_.plural)));
      }
      return true;
    }
    if (!parsed.ok() || !parsed->is_object()) return true;
    json& ev = *parsed;
    std::string type = ev.value("type", "");
    json& obj = ev["object"];
    if (type == "ERROR") {
      if (obj.is_object() && obj.value("code", 0) == 410) {
        gone = true;
      } else if (handlers_.on_error) {
        handlers_.on_error(Unavailable("watch " + std::string(type_.plural) + ": " +
                                       (obj.is_object() ? obj.value("message", "") : obj.dump())));
      }
      return false;
    }
    if (obj.is_object()) {
      if (auto m = obj.find("metadata"); m != obj.end() && m->is_object()) {
        std::string new_rv = m->value("resourceVersion", "");
        if (!new_rv.empty()) SetRv(new_rv);
      }
    }
    progressed = true;
    EventType et;
    if (type == "ADDED") {
      et = EventType::kAdded;
    } else if (type == "MODIFIED") {
      et = EventType::kModified;
    } else if (type == "DELETED") {
      et = EventType::kDeleted;
    } else {
      return true;  // BOOKMARK (only moves the resourceVersion) or unknown
    }
    ++events_;
    handlers_.on_event(WatchEvent{et, std::move(obj)});
    return !stopped_.load();
  };
  std::function<bool(std::string_view)> on_data = [&](std::string_view chunk) -> bool {
    // A line longer than any event can be is not buffered further: the watch starts again.
    // (What is buffered between chunks is a line's start: no newline.)
    if (buffer.size() + chunk.size() > codec::kKubeObjectJson.max_bytes &&
        chunk.find('\n') == std::string_view::npos) {
      if (handlers_.on_error) {
        handlers_.on_error(ResourceExhausted(
            "watch " + std::string(type_.plural) + ": an event line over " +
            std::to_string(codec::kKubeObjectJson.max_bytes) + " bytes; watching again"));
      }
      buffer.clear();
      return false;
    }
    buffer.append(chunk);
    size_t start = 0;
    while (true) {
      size_t nl = buffer.find('\n', start);
      if (nl == std::string::npos) break;
      if (!on_line(std::string_view(buffer).substr(start, nl - start))) return false;
      start = nl + 1;
    }
    buffer.erase(0, start);
    return true;
  };
  client_.limiter_.Acquire();
  auto resp = client_.http_->Stream({"GET", path, "", ""}, on_data, *cancel_);
  if (stopped_) return false;
  if (!resp.ok()) {
    // A broken connection: resume from the last resourceVersion.
    if (handlers_.on_error) handlers_.on_error(resp.status());
    if (!progressed) Backoff();
    return false;
  }
  if (resp->code == 410) return true;
  if (resp->code < 200 || resp->code >= 300) {
    if (handlers_.on_error) handlers_.on_error(StatusFromHttp("GET", path, *resp));
    Backoff();
    return false;
  }
  if (!buffer.empty() && !gone) on_line(buffer);  // a last line without newline
  if (progressed) {
    backoff_ = std::chrono::milliseconds(0);
  } else if (!gone) {
    Backoff();  // an answer without events (e.g. an ERROR event): do not spin
  }
  return gone;
}

void Watcher::Run() {
  bool need_list = resource_version().empty();
  bool first = true;
  while (!stopped_) {
    if (need_list) {
      if (!List()) {
        Backoff();
        continue;
      }
      need_list = false;
    }
    if (!first) ++reconnects_;
    first = false;
    need_list = WatchOnce();
  }
}

}  // namespace vgpu::kube
