#pragma once

// One simulated node: its Node object, the real device plugin with fake GPUs, and the kubelet's
// device-plugin side (registration, device list, Allocate for pods bound here).

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "deviceplugin/plugin.h"
#include "kube/client.h"
#include "sim/apiserver/api_server.h"
#include "sim/cluster/plugin_link.h"
#include "sim/cluster/runner.h"
#include "sim/cluster/scenario.h"

namespace vgpu::sim {

struct SimNodeOptions {
  std::string dir;  // this node's device-plugin directory (sockets, hook path)
  PluginMode mode = PluginMode::kGrpc;
  int split_count = 10;
  std::shared_ptr<kube::Client> client;  // the plugin's API client (HTTP to the API server)
};

// Pod annotation where the simulated kubelet records the env each container got from Allocate.
inline constexpr const char* kAllocateEnvAnnotation = "vgpu.sim/allocate-env";

class SimNode {
 public:
  static Result<std::unique_ptr<SimNode>> Start(const NodeSpec& spec, ApiServer& api,
                                                const SimNodeOptions& options);
  ~SimNode();

  const std::string& name() const { return name_; }
  size_t replicas() const { return all_replicas_.size(); }

  // kubelet admitting a pod bound here: Allocate for each container asking for GPUs, then
  // status.phase Running (or Failed with the plugin's message). Returns the Allocate outcome.
  Status RunPod(const nlohmann::json& pod);
  // The pod is gone: its replica IDs are free again.
  void ReleasePod(const std::string& key);

 private:
  SimNode(std::string name, ApiServer& api) : name_(std::move(name)), api_(api) {}
  static std::vector<deviceplugin::GpuDevice> Gpus(const NodeSpec& spec);
  Status StartPlugin(const NodeSpec& spec, const SimNodeOptions& options);
  Status StartAllocatorOnly(const NodeSpec& spec, const SimNodeOptions& options);

  std::string name_;
  ApiServer& api_;
  std::unique_ptr<GrpcKubeletEndpoint> endpoint_;
  std::unique_ptr<deviceplugin::DevicePlugin> plugin_;
  std::unique_ptr<deviceplugin::ClusterApi> allocator_api_;  // kAllocatorOnly
  std::unique_ptr<deviceplugin::Allocator> allocator_;       // kAllocatorOnly
  std::unique_ptr<PluginLink> link_;
  std::vector<std::string> all_replicas_;
  std::mutex mu_;
  std::set<std::string> used_;
  std::map<std::string, std::vector<std::string>> by_pod_;
};

// "<namespace>/<name>" of a pod object.
std::string PodKey(const nlohmann::json& pod);

}  // namespace vgpu::sim
