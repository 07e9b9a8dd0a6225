#pragma once

// Production wiring of the extender to Kubernetes through kube::Client: the ClusterApi calls,
// the watches that feed the ClusterModel (nodes, pods, resourcequotas), and the handshake
// writer that asks device plugins to prove they are alive (HAMi v2.8+ protocol).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "kube/client.h"
#include "scheduler/cluster_api.h"
#include "scheduler/cluster_model.h"

namespace vgpu::scheduler {

inline constexpr kube::ResourceType kResourceQuotas{"/api/v1", "resourcequotas", true};
// policy/v1 from Kubernetes 1.21; 1.20 serves only v1beta1 (removed in 1.25).
inline constexpr kube::ResourceType kPdbsV1{"/apis/policy/v1", "poddisruptionbudgets", true};
inline constexpr kube::ResourceType kPdbsV1beta1{"/apis/policy/v1beta1", "poddisruptionbudgets",
                                                 true};

class KubeClusterApi : public ClusterApi {
 public:
  explicit KubeClusterApi(kube::Client& client) : client_(client) {}
  Result<nlohmann::json> GetNode(const std::string& name) override;
  Result<nlohmann::json> GetPod(const std::string& ns, const std::string& name) override;
  Status JsonPatchNode(const std::string& name, const nlohmann::json& ops) override;
  Status MergePatchPod(const std::string& ns, const std::string& name,
                       const nlohmann::json& patch) override;
  Status BindPod(const std::string& ns, const std::string& name, const std::string& uid,
                 const std::string& node) override;
  Result<nlohmann::json> ListDisruptionBudgets() override;

 private:
  kube::Client& client_;
};

struct FeedOptions {
  bool watch_quotas = true;  // off where the API server has no resourcequotas
  bool write_handshake = true;
  std::chrono::seconds handshake_interval{30};
  std::chrono::seconds handshake_timeout{60};
};

// Runs the watches; ready() once the first node and pod lists are in the model.
class KubeFeed {
 public:
  KubeFeed(kube::Client& client, ClusterModel& model, FeedOptions options);
  ~KubeFeed();
  KubeFeed(const KubeFeed&) = delete;
  KubeFeed& operator=(const KubeFeed&) = delete;

  bool ready() const { return nodes_listed_.load() && pods_listed_.load(); }
  // Waits up to `timeout` for ready().
  bool WaitReady(std::chrono::milliseconds timeout) const;
  // Restarts the node and pod (and quota) watches: each lists again, a fresh read from the API
  // server, and replaces the model's view (reservations in flight survive). Returns at once;
  // synced() is false until the new node and pod lists are in. A new leader calls it so that
  // what the previous leader wrote just before stepping down is in the model before it binds.
  void Resync();
  // The node and pod lists of the latest start or Resync() are in the model.
  bool synced() const;
  void Stop();

 private:
  void StartWatches();  // under watch_mu_
  void HandshakeLoop();

  kube::Client& client_;
  ClusterModel& model_;
  FeedOptions options_;
  std::atomic<bool> nodes_listed_{false}, pods_listed_{false};
  std::atomic<uint64_t> generation_{0}, nodes_generation_{0}, pods_generation_{0};
  std::mutex watch_mu_;
  bool watches_stopped_ = false;
  std::unique_ptr<kube::Watcher> nodes_, pods_, quotas_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread handshake_;
};

}  // namespace vgpu::scheduler
