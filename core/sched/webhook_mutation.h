#pragma once

// The mutating/validating webhook's decision for one pod: deny with a reason, or allow with a
// JSON patch (RFC 6902). Pure: the caller supplies the namespace's quota and usage.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/sched/control_overrides.h"
#include "core/sched/pod_request.h"
#include "core/sched/quota.h"

namespace vgpu::sched {

// What the webhook does with a pod it would refuse (vgpu-scheduler --webhook-mode).
enum class WebhookMode {
  kEnforce,  // refuse it (the default)
  // Admit it with a warning, for operators who migrate from HAMi and want to find the workloads
  // that enforcement would refuse before it does. Only refusals of things HAMi's webhook admits
  // and that the scheduler's filter or Allocate hold again are relaxed (AuditReason); the
  // refusals HAMi makes too (privileged, spec.nodeName), malformed requests and UPDATEs of vgpu's
  // own annotations are enforced in both modes (docs/security.md §6).
  kAudit,
};

// "enforce" or "audit"; anything else is an error naming both.
Result<WebhookMode> ParseWebhookMode(const std::string& text);

// Why audit mode admitted a pod that enforce mode refuses: the `reason` label of
// vgpu_scheduler_webhook_would_deny_total.
enum class AuditReason {
  kInvalidValue,  // a vGPU resource value or a scheduling annotation the parser refuses
  kOverride,      // vgpu's own annotations or enforcement variables (control_overrides.h)
  kQuota,         // over the namespace's GPU quota
  kCount,
};
std::string_view AuditReasonName(AuditReason r);

struct AuditFinding {
  AuditReason reason;
  std::string message;  // the refusal enforce mode would answer
};

struct AdmissionConfig {
  WebhookMode mode = WebhookMode::kEnforce;
  ResourceNames names;
  RequestDefaults defaults;
  std::string scheduler_name = "hami-scheduler";
  // GPU_CORE_UTILIZATION_POLICY for vGPU containers; empty or "default" adds nothing.
  std::string core_policy;
  // Which of vgpu's own annotations and enforcement variables pods may set (none by default).
  OverridePolicy overrides;
  // Usernames that may change vgpu's own annotations of a pod after its creation: the
  // scheduler's and the device plugin's ServiceAccounts (ServiceAccountUser). Empty: nobody.
  std::vector<std::string> system_users;
};

struct AdmissionDecision {
  bool allowed = true;
  std::string message;                             // why it was denied
  nlohmann::json patch = nlohmann::json::array();  // empty when nothing changes
  bool asks_vgpu = false;
  // What the pod's author should know although the pod is admitted: a value HAMi reads in a way
  // that may surprise (gpumem 0 is the default memory, not 0 MiB). AdmissionReview `warnings`:
  // kubectl prints them.
  std::vector<std::string> warnings;
  // Audit mode only: what enforce mode would have refused (the pod is admitted, each finding is
  // also one of `warnings`). Always empty in enforce mode.
  std::vector<AuditFinding> would_deny;
};

// Decides for `pod` (the AdmissionReview's request.object of a CREATE). Applying the patch and
// admitting the result again yields an empty patch (reinvocation-safe). In audit mode a pod that
// would be refused for an AuditReason gets the patch it would get without that check (the
// scheduler's name above all, so that the scheduler's filter holds it with the same message),
// plus a warning and a finding.
AdmissionDecision AdmitPod(const nlohmann::json& pod, const AdmissionConfig& config,
                           const std::optional<NamespaceQuota>& quota);

// Decides for an UPDATE of a pod by `username` (request.userInfo.username): denied when it
// changes the annotations and labels only vgpu writes and `username` is none of
// config.system_users (UpdateDenial); otherwise allowed, never patched (a pod's spec is fixed once
// created, and the system's own writes must pass unchanged).
AdmissionDecision AdmitPodUpdate(const nlohmann::json& old_pod, const nlohmann::json& new_pod,
                                 const std::string& username, const AdmissionConfig& config);

// "a/b~c" -> "a~1b~0c" (RFC 6901).
std::string JsonPointerEscape(const std::string& token);

}  // namespace vgpu::sched
