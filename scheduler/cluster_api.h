#pragma once

// The few Kubernetes API calls the extender makes, so that its logic does not depend on how
// they travel (kube::Client in production, the same client against sim/apiserver in tests).

#include <nlohmann/json.hpp>
#include <string>

#include "core/base/status.h"

namespace vgpu::scheduler {

class ClusterApi {
 public:
  virtual ~ClusterApi() = default;
  virtual Result<nlohmann::json> GetNode(const std::string& name) = 0;
  virtual Result<nlohmann::json> GetPod(const std::string& ns, const std::string& name) = 0;
  // RFC 6902 patch; a failed `test` op or a stale resourceVersion is FailedPrecondition.
  virtual Status JsonPatchNode(const std::string& name, const nlohmann::json& ops) = 0;
  // RFC 7386 merge patch of the pod (annotations and labels).
  virtual Status MergePatchPod(const std::string& ns, const std::string& name,
                               const nlohmann::json& patch) = 0;
  // Every PodDisruptionBudget (a List object: items). The preempt verb reads them when it runs
  // (rare, and kube-scheduler reads the same from its informer); an API server without the
  // resource answers an empty list.
  virtual Result<nlohmann::json> ListDisruptionBudgets() = 0;
  virtual Status BindPod(const std::string& ns, const std::string& name, const std::string& uid,
                         const std::string& node) = 0;
};

}  // namespace vgpu::scheduler
