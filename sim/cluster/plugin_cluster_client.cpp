#include "sim/cluster/plugin_cluster_client.h"

namespace vgpu::sim {

std::string AnnotationPointer(const std::string& key) {
  std::string out = "/metadata/annotations/";
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Result<nlohmann::json> PluginClusterClient::GetNode(const std::string& name) {
  return client_->Get(kube::kNodes, "", name);
}

Result<nlohmann::json> PluginClusterClient::GetPod(const std::string& ns, const std::string& name) {
  return client_->Get(kube::kPods, ns, name);
}

Result<std::vector<nlohmann::json>> PluginClusterClient::ListPodsOnNode(const std::string& node) {
  kube::ListOptions options;
  options.field_selector = "spec.nodeName=" + node;
  Result<nlohmann::json> list = client_->List(kube::kPods, "", options);
  if (!list.ok()) return list.status();
  std::vector<nlohmann::json> pods;
  if (list->contains("items") && (*list)["items"].is_array()) {
    for (nlohmann::json& item : (*list)["items"]) pods.push_back(std::move(item));
  }
  return pods;
}

Status PluginClusterClient::PatchPodAnnotations(const std::string& ns, const std::string& name,
                                                const deviceplugin::AnnotationPatch& patch) {
  return client_->PatchAnnotations(kube::kPods, ns, name, patch).status();
}

Status PluginClusterClient::PatchNodeAnnotations(const std::string& name,
                                                 const deviceplugin::AnnotationPatch& patch) {
  return client_->PatchAnnotations(kube::kNodes, "", name, patch).status();
}

Status PluginClusterClient::RemoveNodeAnnotationIf(const std::string& name, const std::string& key,
                                                   const std::string& expected) {
  const std::string path = AnnotationPointer(key);
  const nlohmann::json ops = nlohmann::json::array(
      {{{"op", "test"}, {"path", path}, {"value", expected}}, {{"op", "remove"}, {"path", path}}});
  return client_->JsonPatch(kube::kNodes, "", name, ops).status();
}

}  // namespace vgpu::sim
