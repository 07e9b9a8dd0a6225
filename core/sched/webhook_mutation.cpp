#include "core/sched/webhook_mutation.h"

#include "vgpu/env_contract.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;

// A string member, or `fallback` when absent or not a string (never throws).
std::string Str(const json& obj, const char* key, const std::string& fallback = "") {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool IsPrivileged(const json& c) {
  auto sc = c.find("securityContext");
  if (sc == c.end() || !sc->is_object()) return false;
  auto p = sc->find("privileged");
  return p != sc->end() && p->is_boolean() && p->get<bool>();
}

bool HasEnv(const json& c, const std::string& name) {
  auto env = c.find("env");
  if (env == c.end() || !env->is_array()) return false;
  for (const json& e : *env) {
    if (Str(e, "name") == name) return true;
  }
  return false;
}

// Values HAMi reads other than their face value (they are admitted: HAMi users' pods carry them).
void ZeroValueWarnings(const json& c, const codec::ContainerRequest& ask,
                       const AdmissionConfig& cfg, std::vector<std::string>& warnings) {
  const std::string where = "container " + Str(c, "name", "?") + ": ";
  const bool other = ask.memory_mib || ask.memory_percentage || ask.cores;
  if (ask.count_given && ask.count == 0) {
    if (other) {
      warnings.push_back(where + cfg.names.count +
                         " is 0, so the container gets no GPU; its other vGPU resources are "
                         "ignored (ask for 1 or more, or drop them)");
    }
    return;
  }
  const bool zero_mem = ask.memory_mib && *ask.memory_mib == 0;
  const bool zero_pct = ask.memory_percentage && *ask.memory_percentage == 0;
  if (!(zero_mem || zero_pct) || (ask.memory_mib && *ask.memory_mib > 0) ||
      (ask.memory_percentage && *ask.memory_percentage > 0)) {
    return;
  }
  const std::string default_mem = cfg.defaults.mem_mib > 0
                                      ? std::to_string(cfg.defaults.mem_mib) + " MiB per vGPU"
                                      : std::string("the whole card's memory");
  warnings.push_back(where + (zero_mem ? cfg.names.memory : cfg.names.memory_percentage) +
                     " 0 means unset (as in HAMi), not 0 MiB: the container gets the default, " +
                     default_mem);
}

// Collects the additions for one container into `patch`; returns a denial message or "".
std::string MutateContainer(const json& c, const codec::ContainerRequest& ask,
                            const std::string& path, const AdmissionConfig& cfg, json& patch,
                            bool& asks) {
  const std::string cname = Str(c, "name", "?");
  if (!ask.AsksForGpu()) return "";
  asks = true;
  if (IsPrivileged(c)) {
    return "container " + cname +
           " is privileged and asks for vGPU resources; a privileged container sees every GPU and "
           "bypasses vGPU limits: drop securityContext.privileged or the " +
           cfg.names.count + " resources";
  }

  json add_limits = json::object();
  if (ask.count == 0) add_limits[cfg.names.count] = std::to_string(cfg.defaults.gpu_num);
  if (ask.count > 0 && !ask.memory_mib && !ask.memory_percentage && !ask.cores) {
    add_limits[cfg.names.cores] = "100";  // a whole card
  }
  if (!add_limits.empty()) {
    auto res = c.find("resources");
    const bool has_res = res != c.end() && res->is_object();
    const bool has_limits = has_res && res->contains("limits") && (*res)["limits"].is_object();
    if (!has_res) {
      patch.push_back(
          {{"op", "add"}, {"path", path + "/resources"}, {"value", {{"limits", add_limits}}}});
    } else if (!has_limits) {
      patch.push_back({{"op", "add"}, {"path", path + "/resources/limits"}, {"value", add_limits}});
    } else {
      for (auto& [k, v] : add_limits.items()) {
        patch.push_back({{"op", "add"},
                         {"path", path + "/resources/limits/" + JsonPointerEscape(k)},
                         {"value", v}});
      }
    }
  }

  json envs = json::array();
  if (ask.priority && !HasEnv(c, VGPU_ENV_TASK_PRIORITY)) {
    envs.push_back({{"name", VGPU_ENV_TASK_PRIORITY}, {"value", std::to_string(*ask.priority)}});
  }
  if (!cfg.core_policy.empty() && cfg.core_policy != VGPU_CORE_POLICY_DEFAULT &&
      !HasEnv(c, VGPU_ENV_CORE_POLICY)) {
    envs.push_back({{"name", VGPU_ENV_CORE_POLICY}, {"value", cfg.core_policy}});
  }
  if (!envs.empty()) {
    auto env = c.find("env");
    if (env == c.end() || !env->is_array()) {
      patch.push_back({{"op", "add"}, {"path", path + "/env"}, {"value", envs}});
    } else {
      for (json& e : envs)
        patch.push_back({{"op", "add"}, {"path", path + "/env/-"}, {"value", e}});
    }
  }
  return "";
}

AdmissionDecision Deny(std::string message) {
  AdmissionDecision d;
  d.allowed = false;
  d.message = std::move(message);
  d.patch = json::array();
  return d;
}

}  // namespace

std::string JsonPointerEscape(const std::string& token) {
  std::string out;
  for (char ch : token) {
    if (ch == '~') {
      out += "~0";
    } else if (ch == '/') {
      out += "~1";
    } else {
      out += ch;
    }
  }
  return out;
}

Result<WebhookMode> ParseWebhookMode(const std::string& text) {
  if (text == "enforce") return WebhookMode::kEnforce;
  if (text == "audit") return WebhookMode::kAudit;
  return InvalidArgument("\"" + text +
                         "\" is not a webhook mode: enforce (refuse what the checks refuse) or "
                         "audit (admit it with a warning, a log line and a metric; for a "
                         "migration from HAMi)");
}

std::string_view AuditReasonName(AuditReason r) {
  switch (r) {
    case AuditReason::kInvalidValue:
      return "invalid-value";
    case AuditReason::kOverride:
      return "override";
    case AuditReason::kQuota:
      return "quota";
    case AuditReason::kCount:
      break;
  }
  return "unknown";
}

namespace {

// Records a refusal that audit mode relaxes. Returns true when the caller must refuse (enforce
// mode); false when the pod goes on to be admitted with a warning.
bool Refuse(const AdmissionConfig& cfg, AuditReason reason, const std::string& message,
            AdmissionDecision& d) {
  if (cfg.mode == WebhookMode::kEnforce) return true;
  d.would_deny.push_back({reason, message});
  d.warnings.push_back("vgpu webhook in audit mode: in enforce mode this pod would be denied (" +
                       std::string(AuditReasonName(reason)) + "): " + message);
  return false;
}

// The scheduler's name on a pod that asks for vGPUs, unless it names another scheduler.
void SetSchedulerName(const json& spec, const AdmissionConfig& config, AdmissionDecision& d) {
  const std::string current = Str(spec, "schedulerName");
  if (current.empty() || current == "default-scheduler") {
    d.patch.push_back({{"op", current.empty() ? "add" : "replace"},
                       {"path", "/spec/schedulerName"},
                       {"value", config.scheduler_name}});
  }
}

// `policy` plus every enforcement variable whose effect stays in the tenant's container.
OverridePolicy AuditTolerated(OverridePolicy policy) {
  for (const ControlledName& n : ControlledNames()) {
    const bool env =
        n.kind == ControlledName::Kind::kEnv || n.kind == ControlledName::Kind::kEnvFamily;
    if (env && n.name != VGPU_ENV_NVIDIA_VISIBLE_DEVICES) policy.allowed.emplace_back(n.name);
  }
  return policy;
}

// What HAMi's webhook refuses too, checked on every container: audit mode admits no pod of this
// shape even when its values cannot be read (no HAMi workload carries it, and nothing after the
// webhook takes a privileged container's GPUs away or sends a pod with spec.nodeName through
// the scheduler).
std::string HamiShapeDenial(const json& spec, const AdmissionConfig& config) {
  if (auto n = spec.find("nodeName"); n != spec.end() && n->is_string() && !n->empty()) {
    return "the pod sets spec.nodeName=" + n->get<std::string>() +
           " and mentions vGPU resources; vGPUs are placed by " + config.scheduler_name +
           ", so remove spec.nodeName (use a nodeSelector instead)";
  }
  for (const char* field : {"initContainers", "containers"}) {
    auto list = spec.find(field);
    if (list == spec.end() || !list->is_array()) continue;
    for (const json& c : *list) {
      if (c.is_object() && IsPrivileged(c)) {
        return "container " + Str(c, "name", "?") +
               " is privileged in a pod that mentions vGPU resources; a privileged container "
               "sees every GPU and bypasses vGPU limits: drop securityContext.privileged";
      }
    }
  }
  return "";
}

}  // namespace

AdmissionDecision AdmitPod(const json& pod, const AdmissionConfig& config,
                           const std::optional<NamespaceQuota>& quota) {
  AdmissionDecision d;
  if (!pod.is_object()) return Deny("the admission request has no pod object");
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return Deny("the pod has no spec");

  Result<std::vector<codec::ContainerRequest>> asks = codec::ExtractPodRequests(pod, config.names);
  if (!asks.ok()) {
    if (Refuse(config, AuditReason::kInvalidValue, asks.status().message(), d)) {
      return Deny(asks.status().message());
    }
    // Audit: the containers' asks are unknown, so no defaults; the pod still goes to the
    // scheduler, whose filter refuses the same value (the pod stays Pending, naming it).
    if (std::string shape = HamiShapeDenial(*spec, config); !shape.empty()) {
      return Deny(asks.status().message() + "; and " + shape);
    }
    d.asks_vgpu = true;
    SetSchedulerName(*spec, config, d);
    return d;
  }
  size_t k = 0;  // asks are init containers first, then app containers: the order walked here
  std::vector<const json*> gpu_containers;
  for (const char* field : {"initContainers", "containers"}) {
    auto list = spec->find(field);
    if (list == spec->end() || list->is_null()) continue;
    for (size_t i = 0; i < list->size() && k < asks->size(); ++i, ++k) {
      const std::string path = std::string("/spec/") + field + "/" + std::to_string(i);
      std::string denial =
          MutateContainer((*list)[i], (*asks)[k], path, config, d.patch, d.asks_vgpu);
      if (!denial.empty()) return Deny(denial);  // privileged: refused in both modes
      ZeroValueWarnings((*list)[i], (*asks)[k], config, d.warnings);
      if ((*asks)[k].AsksForGpu()) gpu_containers.push_back(&(*list)[i]);
    }
  }
  // Before the early return: the device plugin's fallback lookup reads the system's annotations
  // from any pending pod on its node, whether or not the pod asks for GPUs.
  std::string overrides = OverrideDenial(pod, gpu_containers, config.core_policy, config.overrides);
  if (!overrides.empty() && config.mode == WebhookMode::kAudit) {
    // Audit mode relaxes only the variables that act inside the tenant's own container, which a
    // tenant's own processes can set anyway (docs/security.md §0). The system's annotations and
    // labels steer the device plugin and the scheduler for other pods' too, and
    // NVIDIA_VISIBLE_DEVICES is read by the container runtime outside the container: refused.
    std::string outside =
        OverrideDenial(pod, gpu_containers, config.core_policy, AuditTolerated(config.overrides));
    if (!outside.empty()) return Deny(outside);
  }
  if (!overrides.empty() && Refuse(config, AuditReason::kOverride, overrides, d)) {
    return Deny(overrides);
  }
  if (!d.asks_vgpu) return d;

  if (auto n = spec->find("nodeName"); n != spec->end() && n->is_string() && !n->empty()) {
    return Deny("the pod sets spec.nodeName=" + n->get<std::string>() +
                " and asks for vGPU resources; vGPUs are placed by " + config.scheduler_name +
                ", so remove spec.nodeName (use a nodeSelector instead)");
  }
  // The rest of the pod must be readable by the scheduler too (policies, selectors).
  Result<PodRequest> req = ParsePodRequest(pod, config.names, config.defaults);
  if (!req.ok()) {
    if (Refuse(config, AuditReason::kInvalidValue, req.status().message(), d)) {
      return Deny(req.status().message());
    }
  } else if (quota) {
    const std::string ns =
        pod.contains("metadata") ? Str(pod["metadata"], "namespace", "default") : "default";
    if (auto v = QuotaViolation(quota->limit, quota->used, RequestedCharge(*req), ns)) {
      if (Refuse(config, AuditReason::kQuota, *v, d)) return Deny(*v);
    }
  }
  SetSchedulerName(*spec, config, d);
  return d;
}

AdmissionDecision AdmitPodUpdate(const json& old_pod, const json& new_pod,
                                 const std::string& username, const AdmissionConfig& config) {
  std::string denial =
      UpdateDenial(old_pod, new_pod, username, config.system_users, config.overrides);
  if (!denial.empty()) return Deny(std::move(denial));
  return {};
}

}  // namespace vgpu::sched
