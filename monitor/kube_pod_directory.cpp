#include "monitor/kube_pod_directory.h"

namespace vgpu::monitor {
namespace {

using nlohmann::json;

// The identity of a pod object; nullopt when it has no uid (not a pod we can match).
std::optional<PodIdentity> IdentityOf(const json& pod) {
  if (!pod.is_object()) return std::nullopt;
  const auto m = pod.find("metadata");
  if (m == pod.end() || !m->is_object()) return std::nullopt;
  const auto text = [&](const char* key) {
    const auto v = m->find(key);
    return v != m->end() && v->is_string() ? v->get<std::string>() : std::string();
  };
  PodIdentity id{text("namespace"), text("name"), text("uid")};
  if (id.uid.empty()) return std::nullopt;
  return id;
}

std::string NodeOf(const json& pod) {
  const auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return "";
  const auto n = spec->find("nodeName");
  return n != spec->end() && n->is_string() ? n->get<std::string>() : "";
}

}  // namespace

KubePodDirectory::KubePodDirectory(KubePodDirectoryOptions options)
    : options_(std::move(options)) {}

KubePodDirectory::~KubePodDirectory() {
  Stop();
}

Result<std::unique_ptr<KubePodDirectory>> KubePodDirectory::Start(kube::Client& client,
                                                                  KubePodDirectoryOptions options) {
  if (options.node_name.empty()) {
    return InvalidArgument("the pod directory needs the node's name");
  }
  std::unique_ptr<KubePodDirectory> d(new KubePodDirectory(std::move(options)));
  kube::WatchOptions wo;
  wo.field_selector = "spec.nodeName=" + d->options_.node_name;
  wo.timeout_seconds = d->options_.watch_timeout_seconds;
  wo.min_backoff = d->options_.min_backoff;
  wo.max_backoff = d->options_.max_backoff;
  kube::WatchHandlers h;
  KubePodDirectory* self = d.get();
  h.on_list = [self](const json& list) { self->OnList(list); };
  h.on_event = [self](const kube::WatchEvent& e) { self->OnEvent(e); };
  h.on_error = [self](const Status& s) { self->OnError(s); };
  d->watcher_ = client.Watch(kube::kPods, "", wo, std::move(h));
  d->watcher_raw_.store(d->watcher_.get());
  return d;
}

void KubePodDirectory::Stop() {
  if (watcher_) watcher_->Stop();
}

std::chrono::steady_clock::time_point KubePodDirectory::Now() const {
  return options_.clock ? options_.clock() : std::chrono::steady_clock::now();
}

void KubePodDirectory::MarkHealthyLocked() {
  failing_since_.reset();
  last_error_.clear();
}

void KubePodDirectory::OnList(const json& list) {
  std::unordered_map<std::string, PodIdentity> pods;
  if (const auto items = list.find("items"); items != list.end() && items->is_array()) {
    for (const json& pod : *items) {
      if (std::optional<PodIdentity> id = IdentityOf(pod)) pods[id->uid] = std::move(*id);
    }
  }
  std::lock_guard lock(mu_);
  pods_ = std::move(pods);
  listed_ = true;
  MarkHealthyLocked();
  listed_cv_.notify_all();
}

void KubePodDirectory::OnEvent(const kube::WatchEvent& event) {
  std::optional<PodIdentity> id = IdentityOf(event.object);
  std::lock_guard lock(mu_);
  MarkHealthyLocked();
  if (!id) return;
  // The field selector keeps other nodes' pods out; a pod that left the selection (the API server
  // sends it as DELETED) or names another node is gone from this node.
  if (event.type == kube::EventType::kDeleted || NodeOf(event.object) != options_.node_name) {
    pods_.erase(id->uid);
  } else {
    pods_[id->uid] = std::move(*id);
  }
}

void KubePodDirectory::OnError(const Status& status) {
  const kube::Watcher* w = watcher_raw_.load();
  const int64_t reconnects = w != nullptr ? w->reconnects() : 0;
  std::lock_guard lock(mu_);
  // A new failure, or the first since the watch recovered without an event (see Synced).
  if (!failing_since_ || RecoveredLocked(reconnects)) failing_since_ = Now();
  reconnects_at_error_ = reconnects;
  last_error_ = status.ToString();
}

std::optional<PodIdentity> KubePodDirectory::Find(const std::string& uid) const {
  std::lock_guard lock(mu_);
  const auto it = pods_.find(uid);
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

bool KubePodDirectory::Synced() const {
  const kube::Watcher* w = watcher_raw_.load();
  const int64_t reconnects = w != nullptr ? w->reconnects() : 0;
  std::lock_guard lock(mu_);
  if (!listed_) return false;
  if (!failing_since_ || Now() - *failing_since_ < options_.stale_after) return true;
  return RecoveredLocked(reconnects);
}

bool KubePodDirectory::RecoveredLocked(int64_t reconnects) const {
  // The watch counts a request when it starts: two more than at the last error means the one
  // after it ended without an error (the API server answered, the view is current again).
  return failing_since_ && reconnects >= reconnects_at_error_ + 2;
}

bool KubePodDirectory::WaitForFirstList(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return listed_cv_.wait_for(lock, timeout, [this] { return listed_; });
}

size_t KubePodDirectory::size() const {
  std::lock_guard lock(mu_);
  return pods_.size();
}

std::string KubePodDirectory::last_error() const {
  const kube::Watcher* w = watcher_raw_.load();
  const int64_t reconnects = w != nullptr ? w->reconnects() : 0;
  std::lock_guard lock(mu_);
  return RecoveredLocked(reconnects) ? std::string() : last_error_;
}

}  // namespace vgpu::monitor
