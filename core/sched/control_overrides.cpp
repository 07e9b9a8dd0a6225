#include "core/sched/control_overrides.h"

#include <strings.h>

#include <algorithm>

#include "core/codec/annotations.h"
#include "vgpu/env_contract.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;
using Kind = ControlledName::Kind;

constexpr std::string_view kAnyName = "*";

std::string Str(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

bool Allowed(const OverridePolicy& policy, std::string_view name) {
  return std::any_of(policy.allowed.begin(), policy.allowed.end(),
                     [&](const std::string& a) { return a == kAnyName || a == name; });
}

// GPU_CORE_UTILIZATION_POLICY values from the loosest to the strictest, as libvgpu reads them:
// without regard to case, anything else (and empty) as "default".
constexpr int kDisableRank = 0;
constexpr int kDefaultRank = 1;
int Strictness(const std::string& value, bool* known = nullptr) {
  const char* order[] = {VGPU_CORE_POLICY_DISABLE, VGPU_CORE_POLICY_DEFAULT,
                         VGPU_CORE_POLICY_FORCE};
  for (int i = 0; i < 3; ++i) {
    if (strcasecmp(value.c_str(), order[i]) == 0) {
      if (known != nullptr) *known = true;
      return i;
    }
  }
  if (known != nullptr) *known = false;
  return kDefaultRank;
}

// The controlled name `env_name` belongs to, or nullptr.
const ControlledName* EnvEntry(const std::string& env_name) {
  for (const ControlledName& n : ControlledNames()) {
    if (n.kind == Kind::kEnv && env_name == n.name) return &n;
    if (n.kind == Kind::kEnvFamily && env_name.compare(0, n.name.size(), n.name) == 0 &&
        (env_name.size() == n.name.size() || env_name[n.name.size()] == '_')) {
      return &n;
    }
  }
  return nullptr;
}

struct Found {
  std::string what;       // "annotation hami.io/bind-phase", "container c env CUDA_..."
  std::string_view name;  // the controlled name, for the allow hint
  std::string effect;
};

}  // namespace

const std::vector<ControlledName>& ControlledNames() {
  namespace anno = annotations;
  static const std::vector<ControlledName> names = {
      {anno::kVgpuNode, Kind::kAnnotation,
       "the node the scheduler placed the pod on; the device plugin serves pods by it"},
      {anno::kVgpuTime, Kind::kAnnotation, "the scheduler's placement time"},
      {anno::kDevicesAllocated, Kind::kAnnotation,
       "the scheduler's record of the pod's GPUs; GPU usage is rebuilt from it"},
      {anno::kDevicesToAllocate, Kind::kAnnotation,
       "the GPUs and limits the device plugin hands each container"},
      {anno::kBindPhase, Kind::kAnnotation,
       "the bind's state; the device plugin serves pods in phase allocating"},
      {anno::kBindTime, Kind::kAnnotation, "orders the pods the device plugin serves"},
      {anno::kCapacityFreedAt, Kind::kAnnotation, "the scheduler's re-queue nudge"},
      {anno::kVgpuNode, Kind::kLabel, "written by the scheduler with the annotation of that name"},
      {anno::kWebhookSelectorLabel, Kind::kUpdateLabel,
       "a pod that carries it before and after an update is never sent to the webhook again, so "
       "its later updates go unchecked"},
      {VGPU_ENV_DISABLE_CONTROL, Kind::kEnv,
       "the device plugin leaves libvgpu.so out of the container (HAMi's always, vgpu's with "
       "--allow-disable-control): no GPU limits at all"},
      {VGPU_ENV_MEMORY_LIMIT, Kind::kEnvFamily,
       "competes with the memory limit the device plugin sets from the pod's memory resource "
       "(0 = unlimited)"},
      {VGPU_ENV_SM_LIMIT, Kind::kEnvFamily,
       "competes with the compute limit the device plugin sets from the pod's cores resource "
       "(0 or 100 = unlimited)"},
      {VGPU_ENV_SHARED_CACHE, Kind::kEnv,
       "moves the container's shared region away from the one the device plugin mounted: the "
       "node monitor no longer sees the container (no metrics, host PIDs or sharing flag)"},
      {VGPU_ENV_CORE_POLICY, Kind::kEnv,
       "a value looser than the cluster's gpuCorePolicy lifts the compute limit (disable: "
       "always; default: while the container is alone on its GPU)"},
      {VGPU_ENV_LOCK_DIR, Kind::kEnv,
       "hides the container's kernels from the other tenants of its GPUs: the compute split and "
       "the turns between tenants no longer see it"},
      {VGPU_ENV_NVIDIA_VISIBLE_DEVICES, Kind::kEnv,
       "the container runtime may mount the GPUs named here instead of the ones the device "
       "plugin granted, and those have no limits"},
      {VGPU_ENV_SHARING_MODE, Kind::kEnv,
       "mps tells libvgpu.so that MPS partitions the SMs, so it stops limiting them: on a GPU "
       "without MPS nothing limits them then"},
      {VGPU_ENV_MPS_ACTIVE_THREAD_PERCENTAGE, Kind::kEnv,
       "competes with the SM share the device plugin sets from the pod's cores resource on an MPS "
       "node"},
      {VGPU_ENV_MPS_PINNED_DEVICE_MEM_LIMIT, Kind::kEnv,
       "competes with the pinned-memory limit the device plugin sets from the pod's memory "
       "resource on an MPS node"},
      {VGPU_ENV_MPS_PIPE_DIRECTORY, Kind::kEnv,
       "points the container away from its GPU's MPS daemon: it then runs outside MPS, where "
       "libvgpu.so in MPS mode limits no SMs"},
  };
  return names;
}

Status ValidateOverridePolicy(const OverridePolicy& policy) {
  for (const std::string& a : policy.allowed) {
    if (a == kAnyName) continue;
    const auto& names = ControlledNames();
    if (std::none_of(names.begin(), names.end(),
                     [&](const ControlledName& n) { return n.name == a; })) {
      std::string known;
      for (const ControlledName& n : names) {
        if (n.kind == Kind::kLabel) continue;  // the same name as its annotation
        known += (known.empty() ? "" : ", ") + std::string(n.name);
      }
      std::string message = "'";
      message += a;
      message += "' is not a name the webhook guards (";
      message += known;
      message += ", or * for all)";
      return InvalidArgument(std::move(message));
    }
  }
  for (const std::string& ns : policy.namespaces) {
    if (ns.empty()) return InvalidArgument("an empty namespace name");
  }
  return Status::Ok();
}

std::string OverrideDenial(const json& pod, const std::vector<const json*>& gpu_containers,
                           const std::string& core_policy, const OverridePolicy& policy) {
  const json* meta = pod.is_object() && pod.contains("metadata") ? &pod["metadata"] : nullptr;
  const std::string ns = meta != nullptr ? Str(*meta, "namespace") : "";
  if (!ns.empty() && std::find(policy.namespaces.begin(), policy.namespaces.end(), ns) !=
                         policy.namespaces.end()) {
    return "";
  }
  std::vector<Found> found;
  for (const ControlledName& n : ControlledNames()) {
    if (n.kind != Kind::kAnnotation && n.kind != Kind::kLabel) continue;
    const char* field = n.kind == Kind::kAnnotation ? "annotations" : "labels";
    if (meta == nullptr || !meta->is_object() || !meta->contains(field)) continue;
    const json& map = (*meta)[field];
    if (map.is_object() && map.contains(std::string(n.name)) && !Allowed(policy, n.name)) {
      found.push_back(
          {(n.kind == Kind::kAnnotation ? "annotation " : "label ") + std::string(n.name), n.name,
           std::string(n.effect)});
    }
  }
  const int cluster = Strictness(core_policy);
  const std::string cluster_name = core_policy.empty() ? VGPU_CORE_POLICY_DEFAULT : core_policy;
  for (const json* c : gpu_containers) {
    auto env = c->find("env");
    if (env == c->end() || !env->is_array()) continue;
    for (const json& e : *env) {
      const std::string name = Str(e, "name");
      const ControlledName* n = EnvEntry(name);
      if (n == nullptr || Allowed(policy, n->name)) continue;
      std::string effect(n->effect);
      if (n->name == VGPU_ENV_CORE_POLICY) {
        // The webhook adds the cluster's value itself; that one, or a stricter one, is no
        // override, and nothing is looser than disable. A value from a ConfigMap or a Secret
        // (valueFrom) cannot be judged here.
        if (cluster == kDisableRank) continue;
        const bool literal = e.contains("value") && e["value"].is_string();
        bool known = false;
        const std::string value = literal ? e["value"].get<std::string>() : "";
        const int wanted = literal ? Strictness(value, &known) : -1;
        if (wanted >= cluster) continue;
        if (!literal) {
          effect = "set through valueFrom, so it cannot be checked";
        } else if (!known) {
          effect = "'" + value + "' is none of default, force, disable: libvgpu.so reads it as " +
                   VGPU_CORE_POLICY_DEFAULT;
        }
        effect += "; the cluster's is " + cluster_name;
      }
      found.push_back(
          {"container " + Str(*c, "name") + " env " + name, n->name, std::move(effect)});
    }
  }
  if (found.empty()) return "";

  std::string message = "the pod sets what only vgpu may set: ";
  std::vector<std::string_view> names;
  for (size_t i = 0; i < found.size(); ++i) {
    message += (i ? "; " : "") + found[i].what + " (" + found[i].effect + ")";
    if (std::find(names.begin(), names.end(), found[i].name) == names.end()) {
      names.push_back(found[i].name);
    }
  }
  std::string list;
  bool env = false;
  for (std::string_view n : names) {
    list += (list.empty() ? "" : ",") + std::string(n);
    env = env || EnvEntry(std::string(n)) != nullptr;
  }
  message += std::string(". Remove ") + (found.size() == 1 ? "it" : "them") +
             (env ? " (a vGPU container's limits come from the pod's vGPU resources)" : "") +
             "; a cluster admin can allow " + (found.size() == 1 ? "it" : "them") +
             " with vgpu-scheduler --webhook-allow-overrides=" + list +
             (ns.empty() ? std::string()
                         : ", or everything in this namespace with "
                           "--webhook-override-namespaces=" +
                               ns) +
             " (chart: scheduler.admissionWebhook.allowOverrides, overrideNamespaces)";
  return message;
}

Result<std::string> ServiceAccountUser(std::string_view account) {
  const size_t colon = account.find(':');
  const bool well_formed = colon != std::string_view::npos && colon > 0 &&
                           colon + 1 < account.size() &&
                           account.find(':', colon + 1) == std::string_view::npos &&
                           account.find_first_of(" ,/") == std::string_view::npos;
  if (!well_formed) {
    return InvalidArgument("'" + std::string(account) +
                           "' is not a ServiceAccount as <namespace>:<name> (e.g. "
                           "vgpu:vgpu-scheduler)");
  }
  return "system:serviceaccount:" + std::string(account);
}

std::string UpdateDenial(const json& old_pod, const json& new_pod, const std::string& username,
                         const std::vector<std::string>& system_users,
                         const OverridePolicy& policy) {
  if (!username.empty() &&
      std::find(system_users.begin(), system_users.end(), username) != system_users.end()) {
    return "";
  }
  const auto meta_of = [](const json& pod) -> const json* {
    if (!pod.is_object()) return nullptr;
    auto m = pod.find("metadata");
    return m != pod.end() && m->is_object() ? &*m : nullptr;
  };
  const json* old_meta = meta_of(old_pod);
  const json* new_meta = meta_of(new_pod);
  const std::string ns = new_meta != nullptr ? Str(*new_meta, "namespace") : "";
  if (!ns.empty() && std::find(policy.namespaces.begin(), policy.namespaces.end(), ns) !=
                         policy.namespaces.end()) {
    return "";
  }
  // The value of one annotation or label; null when absent.
  const auto value = [](const json* meta, const char* field, std::string_view name) {
    if (meta == nullptr) return json();
    auto map = meta->find(field);
    if (map == meta->end() || !map->is_object()) return json();
    auto v = map->find(std::string(name));
    return v == map->end() ? json() : *v;
  };
  std::vector<Found> found;
  for (const ControlledName& n : ControlledNames()) {
    if (n.kind != Kind::kAnnotation && n.kind != Kind::kLabel && n.kind != Kind::kUpdateLabel) {
      continue;
    }
    const char* field = n.kind == Kind::kAnnotation ? "annotations" : "labels";
    const json before = value(old_meta, field, n.name);
    const json after = value(new_meta, field, n.name);
    if (before == after || Allowed(policy, n.name)) continue;
    const char* change = before.is_null() ? "adds" : after.is_null() ? "removes" : "changes";
    found.push_back({std::string(change) +
                         (n.kind == Kind::kAnnotation ? " annotation " : " label ") +
                         std::string(n.name),
                     n.name, std::string(n.effect)});
  }
  if (found.empty()) return "";
  std::string message = "the update ";
  std::string list;
  for (size_t i = 0; i < found.size(); ++i) {
    message += (i ? "; " : "") + found[i].what + " (" + found[i].effect + ")";
    if (list.find(found[i].name) == std::string::npos) {
      list += (list.empty() ? "" : ",") + std::string(found[i].name);
    }
  }
  message +=
      ", which only vgpu's scheduler and device plugin may change after the pod is "
      "created; the request came from " +
      (username.empty() ? std::string("an unnamed user") : "user " + username) + ". ";
  if (system_users.empty()) {
    message +=
        "vgpu-scheduler knows no accounts that may: start it with "
        "--webhook-system-accounts=<namespace>:<scheduler's ServiceAccount>,<namespace>:<device "
        "plugin's> (the chart passes them)";
  } else {
    message += "Only ";
    for (size_t i = 0; i < system_users.size(); ++i) {
      message += (i ? ", " : "") + system_users[i];
    }
    message += " may (vgpu-scheduler --webhook-system-accounts)";
  }
  message += "; a cluster admin can allow the change with --webhook-allow-overrides=" + list +
             (ns.empty() ? std::string() : " or --webhook-override-namespaces=" + ns) +
             " (chart: scheduler.admissionWebhook.allowOverrides, overrideNamespaces)";
  return message;
}

}  // namespace vgpu::sched
