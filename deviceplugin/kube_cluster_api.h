#pragma once

// ClusterApi over the project's Kubernetes REST client (vgpu_kube).

#include <memory>

#include "deviceplugin/cluster_api.h"
#include "kube/client.h"

namespace vgpu::deviceplugin {

class KubeClusterApi : public ClusterApi {
 public:
  explicit KubeClusterApi(std::shared_ptr<kube::Client> client) : client_(std::move(client)) {}

  Result<nlohmann::json> GetNode(const std::string& name) override;
  Result<nlohmann::json> GetPod(const std::string& ns, const std::string& name) override;
  Result<std::vector<nlohmann::json>> ListPodsOnNode(const std::string& node) override;
  Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                             const AnnotationPatch& patch) override;
  Status PatchNodeAnnotations(const std::string& name, const AnnotationPatch& patch) override;
  Status PatchNodeStatus(const std::string& name, const nlohmann::json& merge_patch) override;
  Status RemoveNodeAnnotationIf(const std::string& name, const std::string& key,
                                const std::string& expected) override;

 private:
  std::shared_ptr<kube::Client> client_;
};

}  // namespace vgpu::deviceplugin
