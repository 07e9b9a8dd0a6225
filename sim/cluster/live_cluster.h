#pragma once

// A running simulated cluster: the in-process API server, one simulated node (device plugin +
// kubelet side) per scenario node, the extender under test and an HTTP client for it. The
// scheduling loop (runner.h) drives it; tests may drive it directly.

#include <memory>
#include <string>
#include <vector>

#include "kube/client.h"
#include "sim/apiserver/api_server.h"
#include "sim/cluster/extender_client.h"
#include "sim/cluster/kubelet_hub.h"
#include "sim/cluster/runner.h"
#include "sim/cluster/sim_node.h"

namespace vgpu::sim {

class LiveCluster {
 public:
  // Starts everything and waits until the extender sees every node's GPUs.
  static Result<std::unique_ptr<LiveCluster>> Start(const Scenario& scenario,
                                                    const PolicyPair& policy,
                                                    const RunOptions& options);
  ~LiveCluster();  // Stop()
  // Kubelets, extender, plugins, API server, in that order. Idempotent.
  void Stop();

  ApiServer& api() { return *api_; }
  ExtenderClient& extender() { return *http_; }
  KubeletHub& kubelets() { return *hub_; }
  const std::vector<std::string>& node_names() const { return node_names_; }
  // An extender client of its own, for callers on other threads.
  Result<std::unique_ptr<ExtenderClient>> NewExtenderClient() const;

  // Nodes and pods as the API server holds them now, for the invariant checker.
  Result<ClusterSnapshot> Snapshot(const RequestDefaults& defaults = {});

 private:
  LiveCluster() = default;
  Status WaitExtenderSeesNodes(const PolicyPair& policy, const RunOptions& options);

  std::string dir_;
  std::unique_ptr<ApiServer> api_;
  std::shared_ptr<kube::Client> client_;
  std::vector<std::unique_ptr<SimNode>> nodes_;
  std::vector<std::string> node_names_;
  std::unique_ptr<ExtenderHandle> extender_;
  std::unique_ptr<ExtenderClient> http_;
  std::unique_ptr<KubeletHub> hub_;
};

}  // namespace vgpu::sim
