#include "scheduler/kube_adapter.h"

#include "core/codec/annotations.h"
#include "core/codec/node_lock.h"

namespace vgpu::scheduler {

using nlohmann::json;

Result<json> KubeClusterApi::GetNode(const std::string& name) {
  return client_.Get(kube::kNodes, "", name);
}

Result<json> KubeClusterApi::GetPod(const std::string& ns, const std::string& name) {
  return client_.Get(kube::kPods, ns, name);
}

Status KubeClusterApi::JsonPatchNode(const std::string& name, const json& ops) {
  Result<json> r = client_.JsonPatch(kube::kNodes, "", name, ops);
  return r.ok() ? Status::Ok() : r.status();
}

Status KubeClusterApi::MergePatchPod(const std::string& ns, const std::string& name,
                                     const json& patch) {
  Result<json> r = client_.MergePatch(kube::kPods, ns, name, patch);
  return r.ok() ? Status::Ok() : r.status();
}

Status KubeClusterApi::BindPod(const std::string& ns, const std::string& name,
                               const std::string& /*uid*/, const std::string& node) {
  return client_.Bind(ns, name, node);
}

Result<json> KubeClusterApi::ListDisruptionBudgets() {
  Result<json> list = client_.List(kPdbsV1, "");
  if (!list.ok() && list.status().code() == StatusCode::kNotFound) {
    list = client_.List(kPdbsV1beta1, "");
  }
  if (!list.ok() && list.status().code() == StatusCode::kNotFound) {
    return json{{"items", json::array()}};  // no PDB API at all: nothing protects any pod
  }
  return list;
}

KubeFeed::KubeFeed(kube::Client& client, ClusterModel& model, FeedOptions options)
    : client_(client), model_(model), options_(options) {
  {
    std::lock_guard lock(watch_mu_);
    StartWatches();
  }
  if (options_.write_handshake) handshake_ = std::thread([this] { HandshakeLoop(); });
}

void KubeFeed::StartWatches() {
  const uint64_t generation = generation_.fetch_add(1) + 1;
  const auto on_event = [](auto upsert, auto remove) {
    return [upsert, remove](const kube::WatchEvent& e) {
      if (e.type == kube::EventType::kDeleted) {
        remove(e.object);
      } else if (e.type != kube::EventType::kBookmark) {
        upsert(e.object);
      }
    };
  };
  const auto items = [](const json& list) {
    auto it = list.find("items");
    return it != list.end() ? *it : json::array();
  };
  kube::WatchHandlers nodes;
  nodes.on_event = on_event([this](const json& o) { model_.UpsertNode(o); },
                            [this](const json& o) {
                              if (o.contains("metadata") && o["metadata"].contains("name")) {
                                model_.RemoveNode(o["metadata"]["name"].get<std::string>());
                              }
                            });
  nodes.on_list = [this, items, generation](const json& list) {
    model_.ReplaceNodes(items(list));
    nodes_listed_.store(true);
    nodes_generation_.store(generation);
  };
  nodes_ = client_.Watch(kube::kNodes, "", {}, nodes);

  kube::WatchHandlers pods;
  pods.on_event = on_event([this](const json& o) { model_.UpsertPod(o); },
                           [this](const json& o) { model_.RemovePod(o); });
  pods.on_list = [this, items, generation](const json& list) {
    model_.ReplacePods(items(list));
    pods_listed_.store(true);
    pods_generation_.store(generation);
  };
  pods_ = client_.Watch(kube::kPods, "", {}, pods);

  if (options_.watch_quotas) {
    kube::WatchHandlers quotas;
    quotas.on_event = on_event([this](const json& o) { model_.UpsertQuota(o); },
                               [this](const json& o) { model_.RemoveQuota(o); });
    quotas.on_list = [this, items](const json& list) { model_.ReplaceQuotas(items(list)); };
    quotas_ = client_.Watch(kResourceQuotas, "", {}, quotas);
  }
}

void KubeFeed::Resync() {
  std::lock_guard lock(watch_mu_);
  if (watches_stopped_) return;
  // The old watchers stop (and their handlers return) before the new ones list, so an older list
  // can never overwrite a newer event.
  for (auto* w : {&nodes_, &pods_, &quotas_}) {
    if (*w) (*w)->Stop();
    w->reset();
  }
  StartWatches();
}

bool KubeFeed::synced() const {
  const uint64_t g = generation_.load();
  return nodes_generation_.load() == g && pods_generation_.load() == g;
}

KubeFeed::~KubeFeed() {
  Stop();
}

bool KubeFeed::WaitReady(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void KubeFeed::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (handshake_.joinable()) handshake_.join();
  std::lock_guard lock(watch_mu_);
  watches_stopped_ = true;
  for (auto* w : {&nodes_, &pods_, &quotas_}) {
    if (*w) (*w)->Stop();
  }
}

void KubeFeed::HandshakeLoop() {
  namespace anno = vgpu::annotations;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, options_.handshake_interval);
    if (stopping_) break;
    lock.unlock();
    const auto now = std::chrono::system_clock::now();
    std::vector<std::pair<std::string, std::string>> writes;
    model_.ForEachNode([&](const sched::NodeState& n) {
      if (!n.handshake) return;
      const auto secs = std::chrono::time_point_cast<std::chrono::seconds>(now);
      if (n.handshake->state == codec::HandshakeState::kReported) {
        // Ask the device plugin to answer again; it rewrites "Reported <time>".
        writes.emplace_back(n.name,
                            codec::EncodeHandshake({codec::HandshakeState::kRequesting, secs}));
      } else if (n.handshake->state == codec::HandshakeState::kRequesting &&
                 now - n.handshake->time > options_.handshake_timeout) {
        writes.emplace_back(n.name,
                            codec::EncodeHandshake({codec::HandshakeState::kDeleted, secs}));
      }
    });
    for (const auto& [node, value] : writes) {
      (void)client_.PatchAnnotations(kube::kNodes, "", node,
                                     {{std::string(anno::kNodeHandshake), value}});
    }
    lock.lock();
  }
}

}  // namespace vgpu::scheduler
