#pragma once

// The few Kubernetes API calls the device plugin makes. An interface so that the plugin can
// run over the REST client (a real cluster or the in-process API server) and so that the
// simulated cluster can give each of its plugins its own client.

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace vgpu::deviceplugin {

// Annotation key -> new value; nullopt removes the annotation.
using AnnotationPatch = std::map<std::string, std::optional<std::string>>;

class ClusterApi {
 public:
  virtual ~ClusterApi() = default;
  virtual Result<nlohmann::json> GetNode(const std::string& name) = 0;
  virtual Result<nlohmann::json> GetPod(const std::string& ns, const std::string& name) = 0;
  // Pods bound to `node` (spec.nodeName), all namespaces.
  virtual Result<std::vector<nlohmann::json>> ListPodsOnNode(const std::string& node) = 0;
  virtual Status PatchPodAnnotations(const std::string& ns, const std::string& name,
                                     const AnnotationPatch& patch) = 0;
  virtual Status PatchNodeAnnotations(const std::string& name, const AnnotationPatch& patch) = 0;
  // JSON merge patch of the node's status subresource (extended resources in status.capacity);
  // needs RBAC `patch` on nodes/status.
  virtual Status PatchNodeStatus(const std::string& name, const nlohmann::json& merge_patch) = 0;
  // Removes annotation `key` from the node only while it still equals `expected` (a JSON patch
  // with a `test` op), so that a lock taken meanwhile by someone else is never released.
  // FailedPrecondition when the value changed.
  virtual Status RemoveNodeAnnotationIf(const std::string& name, const std::string& key,
                                        const std::string& expected) = 0;
};

// JSON merge patch body {"metadata":{"annotations":{...}}} for an AnnotationPatch.
inline nlohmann::json AnnotationMergePatch(const AnnotationPatch& patch) {
  nlohmann::json ann = nlohmann::json::object();
  for (const auto& [k, v] : patch) ann[k] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  return {{"metadata", {{"annotations", ann}}}};
}

}  // namespace vgpu::deviceplugin
