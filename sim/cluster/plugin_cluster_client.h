#pragma once

// The device plugin's view of the API (deviceplugin::ClusterClient) over the real REST client,
// so each simulated node's plugin talks to the in-process API server over HTTP as it would to
// a real one.

#include <memory>

#include "deviceplugin/cluster_client.h"
#include "kube/client.h"

namespace vgpu::sim {

class PluginClusterClient : public deviceplugin::ClusterClient {
 public:
  explicit PluginClusterClient(std::shared_ptr<kube::Client> client) : client_(std::move(client)) {}

  Result<nlohmann::json> GetNode(const std::string& name) override;
  // Overrides ClusterClient::GetPod where the plugin's interface has it (added later).
  Result<nlohmann::json> GetPod(const std::string& ns, const std::string& name);  // NOLINT
  Result<std::vector<nlohmann::json>> ListPodsOnNode(const std::string& node) override;
  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const deviceplugin::AnnotationPatch& patch) override;
  Status PatchNodeAnnotations(const std::string& name,
                              const deviceplugin::AnnotationPatch& patch) override;
  Status RemoveNodeAnnotationIf(const std::string& name, const std::string& key,
                                const std::string& expected) override;

 private:
  std::shared_ptr<kube::Client> client_;
};

// "/metadata/annotations/<key>" with RFC 6901 escaping ("~" -> "~0", "/" -> "~1").
std::string AnnotationPointer(const std::string& key);

}  // namespace vgpu::sim
