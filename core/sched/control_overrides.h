#pragma once

// What a pod may not set on itself: the annotations only the system writes (the device plugin's
// Allocate trusts them) and the environment variables that lift or loosen the enforcement of a
// vGPU container's limits. The admission webhook refuses pods that set them unless the cluster
// admin allows them (docs/security.md says why for each name). Pure.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace vgpu::sched {

// What the cluster admin lets pods set anyway.
struct OverridePolicy {
  // Names from ControlledNames() (a variable family such as CUDA_DEVICE_MEMORY_LIMIT covers its
  // `_<i>` forms too); "*" = every one.
  std::vector<std::string> allowed{};
  // Namespaces whose pods may set every one (e.g. the cluster admins' own).
  std::vector<std::string> namespaces{};
};

// One name the webhook guards.
struct ControlledName {
  enum class Kind {
    kAnnotation,   // on every pod
    kLabel,        // on every pod
    kUpdateLabel,  // a label a pod may be created with, but not change later
    kEnv,          // in a container asking for vGPU resources
    kEnvFamily,    // the name and every `<name>_<suffix>`, in such a container
  };
  std::string_view name;
  Kind kind;
  std::string_view effect;  // what setting it does, for the denial message
};

const std::vector<ControlledName>& ControlledNames();

// Rejects what the policy cannot mean: an allowed name that is not a controlled one (a typo
// would allow nothing, silently), an empty namespace.
Status ValidateOverridePolicy(const OverridePolicy& policy);

// The overrides in `pod` (an admitted Pod object; metadata.namespace set) that `policy` does not
// allow, as one denial message naming each and how to allow it; "" when there are none.
// `gpu_containers`: the containers (init or app) that ask for vGPU resources: only their
// environment reaches libvgpu.so and the device plugin. `core_policy`: the cluster's
// GPU_CORE_UTILIZATION_POLICY (the webhook's own; "" = default): a container may set that value
// or a stricter one.
std::string OverrideDenial(const nlohmann::json& pod,
                           const std::vector<const nlohmann::json*>& gpu_containers,
                           const std::string& core_policy, const OverridePolicy& policy);

// The username of a ServiceAccount given as "<namespace>:<name>" (kubectl's spelling):
// "system:serviceaccount:<namespace>:<name>". Errors name what is wrong with `account`.
Result<std::string> ServiceAccountUser(std::string_view account);

// The changes an UPDATE of a pod (`old_pod` -> `new_pod`, the AdmissionReview's oldObject and
// object) makes to the annotations and labels only vgpu writes (the kAnnotation, kLabel and
// kUpdateLabel names: adding, changing or removing one), as one denial message naming each and
// who may change them; "" when there are none, when `username` (request.userInfo.username) is
// one of `system_users` (the scheduler's and the device plugin's ServiceAccounts), or when
// `policy` allows the names (as on creation). With no `system_users` every such change is
// refused: fail closed, with the flag to set in the message.
std::string UpdateDenial(const nlohmann::json& old_pod, const nlohmann::json& new_pod,
                         const std::string& username, const std::vector<std::string>& system_users,
                         const OverridePolicy& policy);

}  // namespace vgpu::sched
