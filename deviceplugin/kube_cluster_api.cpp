#include "deviceplugin/kube_cluster_api.h"

namespace vgpu::deviceplugin {
namespace {

// RFC 6901: '~' -> "~0", '/' -> "~1" (annotation keys contain '/').
std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
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

}  // namespace

Result<nlohmann::json> KubeClusterApi::GetNode(const std::string& name) {
  return client_->Get(kube::kNodes, "", name);
}

Result<nlohmann::json> KubeClusterApi::GetPod(const std::string& ns, const std::string& name) {
  return client_->Get(kube::kPods, ns, name);
}

Result<std::vector<nlohmann::json>> KubeClusterApi::ListPodsOnNode(const std::string& node) {
  kube::ListOptions opts;
  opts.field_selector = "spec.nodeName=" + node;
  auto list = client_->List(kube::kPods, "", opts);
  if (!list.ok()) {
    return list.status();
  }
  std::vector<nlohmann::json> pods;
  if (auto items = list->find("items"); items != list->end() && items->is_array()) {
    pods.reserve(items->size());
    for (auto& p : *items) {
      pods.push_back(std::move(p));
    }
  }
  return pods;
}

Status KubeClusterApi::PatchPodAnnotations(const std::string& ns, const std::string& name,
                                           const AnnotationPatch& patch) {
  return client_->PatchAnnotations(kube::kPods, ns, name, patch).status();
}

Status KubeClusterApi::PatchNodeAnnotations(const std::string& name, const AnnotationPatch& patch) {
  return client_->PatchAnnotations(kube::kNodes, "", name, patch).status();
}

Status KubeClusterApi::PatchNodeStatus(const std::string& name, const nlohmann::json& merge_patch) {
  return client_->MergePatch(kube::kNodes, "", name, merge_patch, "status").status();
}

Status KubeClusterApi::RemoveNodeAnnotationIf(const std::string& name, const std::string& key,
                                              const std::string& expected) {
  const std::string path = "/metadata/annotations/" + PointerToken(key);
  nlohmann::json ops = nlohmann::json::array(
      {{{"op", "test"}, {"path", path}, {"value", expected}}, {{"op", "remove"}, {"path", path}}});
  return client_->JsonPatch(kube::kNodes, "", name, ops).status();
}

}  // namespace vgpu::deviceplugin
