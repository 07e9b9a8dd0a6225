#include "core/sched/webhook_mutation.h"

#include <gtest/gtest.h>

namespace vgpu::sched {
namespace {

using nlohmann::json;

json Pod(const json& container) {
  return {{"metadata", {{"name", "p"}, {"namespace", "team"}}},
          {"spec", {{"containers", json::array({container})}}}};
}

json C(json limits) {
  return {{"name", "c"}, {"resources", {{"limits", limits}}}};
}

TEST(Admission, MutationCases) {
  AdmissionConfig cfg;
  cfg.core_policy = "force";
  struct Case {
    const char* name;
    json pod;
    json want_patch;
  };
  json no_resources = {{"name", "c"}, {"image", "x"}};
  json env_present = C({{"nvidia.com/gpumem", "1000"}});
  env_present["env"] = {{{"name", "A"}, {"value", "1"}}};
  json custom_sched = Pod(C({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "10"}}));
  custom_sched["spec"]["schedulerName"] = "my-scheduler";
  json default_sched = Pod(C({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "10"}}));
  default_sched["spec"]["schedulerName"] = "default-scheduler";
  const json policy_env = {{"name", "GPU_CORE_UTILIZATION_POLICY"}, {"value", "force"}};
  const json sched = {{"op", "add"}, {"path", "/spec/schedulerName"}, {"value", "hami-scheduler"}};
  const Case cases[] = {
      {"no vGPU: untouched", Pod(no_resources), json::array()},
      {"whole card gets gpucores 100",
       Pod(C({{"nvidia.com/gpu", "1"}})),
       {{{"op", "add"},
         {"path", "/spec/containers/0/resources/limits/nvidia.com~1gpucores"},
         {"value", "100"}},
        {{"op", "add"}, {"path", "/spec/containers/0/env"}, {"value", {policy_env}}},
        sched}},
      {"memory only gets default count, env appended",
       Pod(env_present),
       {{{"op", "add"},
         {"path", "/spec/containers/0/resources/limits/nvidia.com~1gpu"},
         {"value", "1"}},
        {{"op", "add"}, {"path", "/spec/containers/0/env/-"}, {"value", policy_env}},
        sched}},
      {"priority becomes env",
       Pod(C({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "10"}, {"nvidia.com/priority", "0"}})),
       {{{"op", "add"},
         {"path", "/spec/containers/0/env"},
         {"value", {{{"name", "CUDA_TASK_PRIORITY"}, {"value", "0"}}, policy_env}}},
        sched}},
      {"custom scheduler kept",
       custom_sched,
       {{{"op", "add"}, {"path", "/spec/containers/0/env"}, {"value", {policy_env}}}}},
      {"default scheduler replaced",
       default_sched,
       {{{"op", "add"}, {"path", "/spec/containers/0/env"}, {"value", {policy_env}}},
        {{"op", "replace"}, {"path", "/spec/schedulerName"}, {"value", "hami-scheduler"}}}},
  };
  for (const Case& c : cases) {
    AdmissionDecision d = AdmitPod(c.pod, cfg, std::nullopt);
    ASSERT_TRUE(d.allowed) << c.name << ": " << d.message;
    EXPECT_EQ(d.patch, c.want_patch) << c.name << ": " << d.patch.dump();
    // Reinvocation: the patched pod needs nothing more.
    json patched = c.pod.patch(d.patch);
    AdmissionDecision again = AdmitPod(patched, cfg, std::nullopt);
    EXPECT_TRUE(again.allowed) << c.name;
    EXPECT_EQ(again.patch, json::array()) << c.name << ": " << again.patch.dump();
  }
}

TEST(Admission, ResourcesObjectMissingIsCreated) {
  AdmissionConfig cfg;
  json pod = Pod(C({{"nvidia.com/gpu", "1"}}));
  pod["spec"]["initContainers"] = {
      {{"name", "i"}, {"resources", {{"requests", {{"nvidia.com/gpumem", "5"}}}}}}};
  AdmissionDecision d = AdmitPod(pod, cfg, std::nullopt);
  ASSERT_TRUE(d.allowed) << d.message;
  EXPECT_EQ(d.patch[0]["path"], "/spec/initContainers/0/resources/limits");
  EXPECT_EQ(d.patch[0]["value"], (json{{"nvidia.com/gpu", "1"}}));
  json patched = pod.patch(d.patch);
  EXPECT_EQ(AdmitPod(patched, cfg, std::nullopt).patch, json::array());
}

TEST(Admission, Denials) {
  AdmissionConfig cfg;
  json privileged = C({{"nvidia.com/gpu", "1"}});
  privileged["securityContext"] = {{"privileged", true}};
  json preset = Pod(C({{"nvidia.com/gpu", "1"}}));
  preset["spec"]["nodeName"] = "node-1";
  json bad_policy = Pod(C({{"nvidia.com/gpu", "1"}}));
  bad_policy["metadata"]["annotations"] = {{"hami.io/gpu-scheduler-policy", "fastest"}};
  struct Case {
    const char* name;
    json pod;
    const char* want;
  };
  const Case cases[] = {
      {"privileged", Pod(privileged), "privileged"},
      {"nodeName preset", preset, "spec.nodeName=node-1"},
      {"percentage > 100", Pod(C({{"nvidia.com/gpumem-percentage", "101"}})), "maximum 100"},
      {"garbage quantity", Pod(C({{"nvidia.com/gpu", "two"}})), "nvidia.com/gpu"},
      {"unknown policy", bad_policy, "fastest"},
      {"not a pod", json("x"), "no pod object"},
      {"containers not a list", json{{"spec", {{"containers", 3}}}}, "not a list"},
  };
  for (const Case& c : cases) {
    AdmissionDecision d = AdmitPod(c.pod, cfg, std::nullopt);
    EXPECT_FALSE(d.allowed) << c.name;
    EXPECT_NE(d.message.find(c.want), std::string::npos) << c.name << ": " << d.message;
    EXPECT_EQ(d.patch, json::array()) << c.name;
  }
}

// The overrides of vgpu's own names (control_overrides_test.cpp has the table): the system's
// annotations on any pod, enforcement variables in the containers that ask for vGPU resources.
TEST(Admission, ControlOverrides) {
  AdmissionConfig cfg;
  json no_gpu = Pod({{"name", "c"}, {"image", "x"}});
  no_gpu["metadata"]["annotations"] = {{"hami.io/vgpu-devices-to-allocate", "GPU-a,NVIDIA,1,1:;"}};
  json opt_out = C({{"nvidia.com/gpu", "1"}});
  opt_out["env"] = {{{"name", "CUDA_DISABLE_CONTROL"}, {"value", "true"}}};
  json sidecar = {{"name", "side"}, {"env", opt_out["env"]}};  // asks for no vGPU
  json with_sidecar = Pod(C({{"nvidia.com/gpu", "1"}}));
  with_sidecar["spec"]["containers"].push_back(sidecar);
  json init_limit = Pod(C({{"nvidia.com/gpu", "1"}}));
  init_limit["spec"]["initContainers"] = {
      {{"name", "i"},
       {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}},
       {"env", {{{"name", "CUDA_DEVICE_MEMORY_LIMIT_0"}, {"value", "0"}}}}}};
  struct Case {
    const char* name;
    json pod;
    OverridePolicy policy;
    const char* want;  // "" = allowed
  };
  const Case cases[] = {
      {"annotation on a pod without vGPUs",
       no_gpu,
       {},
       "annotation hami.io/vgpu-devices-to-allocate"},
      {"annotation allowed", no_gpu, {.allowed = {"hami.io/vgpu-devices-to-allocate"}}, ""},
      {"opt-out in a vGPU container", Pod(opt_out), {}, "container c env CUDA_DISABLE_CONTROL"},
      {"opt-out allowed", Pod(opt_out), {.allowed = {"CUDA_DISABLE_CONTROL"}}, ""},
      {"opt-out in the namespace of admins", Pod(opt_out), {.namespaces = {"team"}}, ""},
      {"opt-out in a container without vGPUs", with_sidecar, {}, ""},
      {"limit in a vGPU init container",
       init_limit,
       {},
       "container i env CUDA_DEVICE_MEMORY_LIMIT_0"},
  };
  for (const Case& c : cases) {
    cfg.overrides = c.policy;
    AdmissionDecision d = AdmitPod(c.pod, cfg, std::nullopt);
    if (std::string(c.want).empty()) {
      EXPECT_TRUE(d.allowed) << c.name << ": " << d.message;
      continue;
    }
    EXPECT_FALSE(d.allowed) << c.name;
    EXPECT_NE(d.message.find(c.want), std::string::npos) << c.name << ": " << d.message;
    EXPECT_EQ(d.patch, json::array()) << c.name;
  }
}

TEST(Admission, QuotaDenialAndAllowance) {
  AdmissionConfig cfg;
  NamespaceQuota q;
  q.limit.mem_mib = 10000;
  q.limit.mem_source = "ResourceQuota gpu limits.nvidia.com/gpumem";
  q.used.mem_mib = 4000;
  const json fits = Pod(C({{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "3000"}}));
  const json too_big = Pod(C({{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "3001"}}));
  EXPECT_TRUE(AdmitPod(fits, cfg, q).allowed);
  AdmissionDecision d = AdmitPod(too_big, cfg, q);
  EXPECT_FALSE(d.allowed);
  // Object, key, resource and the three amounts; 2 GPUs x 3001 MiB is the pod's charge.
  EXPECT_NE(d.message.find("ResourceQuotaExceeded: namespace team: GPU memory quota is 10000 MiB "
                           "(ResourceQuota gpu limits.nvidia.com/gpumem), 4000 MiB in use, this "
                           "pod asks 6002 MiB"),
            std::string::npos)
      << d.message;
}

TEST(Admission, PointerEscape) {
  EXPECT_EQ(JsonPointerEscape("nvidia.com/gpu"), "nvidia.com~1gpu");
  EXPECT_EQ(JsonPointerEscape("a~b/c"), "a~0b~1c");
}

// An UPDATE is never patched (a pod's spec is fixed); it is refused when it changes the system's
// annotations from an account that is not the system's (control_overrides_test.cpp has the table).
TEST(Admission, UpdatesAreCheckedNeverPatched) {
  AdmissionConfig cfg;
  cfg.system_users = {"system:serviceaccount:vgpu:vgpu-device-plugin"};
  json before = Pod(C({{"nvidia.com/gpu", "1"}}));
  before["metadata"]["annotations"] = {{"hami.io/vgpu-devices-to-allocate", "GPU-a,NVIDIA,1,1:;"}};
  json after = before;
  after["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"] = ";";
  AdmissionDecision by_plugin =
      AdmitPodUpdate(before, after, "system:serviceaccount:vgpu:vgpu-device-plugin", cfg);
  EXPECT_TRUE(by_plugin.allowed) << by_plugin.message;
  EXPECT_EQ(by_plugin.patch, json::array());
  AdmissionDecision by_tenant = AdmitPodUpdate(before, after, "alice", cfg);
  EXPECT_FALSE(by_tenant.allowed);
  EXPECT_NE(by_tenant.message.find("changes annotation hami.io/vgpu-devices-to-allocate"),
            std::string::npos)
      << by_tenant.message;
  // Everything else a tenant may change (its own labels, an image) passes untouched, even a spec
  // the mutation would have patched on creation.
  json relabel = before;
  relabel["metadata"]["labels"] = {{"app", "x"}};
  AdmissionDecision own = AdmitPodUpdate(before, relabel, "alice", cfg);
  EXPECT_TRUE(own.allowed);
  EXPECT_EQ(own.patch, json::array());
}

// Audit mode (--webhook-mode=audit) admits what enforce mode refuses for values, in-container
// variables and quota, with the refusal as a warning and a finding, and the patch the pod would
// get without that check: above all the scheduler's name, so that the scheduler's filter (which
// reads the same values and quota) holds the pod rather than default-scheduler placing it.
TEST(Admission, AuditAdmitsWhatEnforceRefusesAndSaysWhy) {
  json opt_out = C({{"nvidia.com/gpu", "1"}});
  opt_out["env"] = {{{"name", "CUDA_DISABLE_CONTROL"}, {"value", "true"}}};
  json bad_policy = Pod(C({{"nvidia.com/gpu", "1"}}));
  bad_policy["metadata"]["annotations"] = {{"hami.io/gpu-scheduler-policy", "fastest"}};
  NamespaceQuota q;
  q.limit.mem_mib = 1000;
  const json sched = {{"op", "add"}, {"path", "/spec/schedulerName"}, {"value", "hami-scheduler"}};
  struct Case {
    const char* name;
    json pod;
    std::optional<NamespaceQuota> quota;
    AuditReason reason;
    const char* message;  // part of the refusal enforce mode answers
  };
  const Case cases[] = {
      {"garbage quantity", Pod(C({{"nvidia.com/gpu", "two"}})), std::nullopt,
       AuditReason::kInvalidValue, "nvidia.com/gpu"},
      {"unknown policy", bad_policy, std::nullopt, AuditReason::kInvalidValue, "fastest"},
      {"variable in its own container", Pod(opt_out), std::nullopt, AuditReason::kOverride,
       "CUDA_DISABLE_CONTROL"},
      {"over quota", Pod(C({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "2000"}})), q,
       AuditReason::kQuota, "quota"},
  };
  for (const Case& c : cases) {
    AdmissionConfig cfg;
    AdmissionDecision enforce = AdmitPod(c.pod, cfg, c.quota);
    ASSERT_FALSE(enforce.allowed) << c.name;
    EXPECT_TRUE(enforce.would_deny.empty()) << c.name;
    EXPECT_NE(enforce.message.find(c.message), std::string::npos) << c.name;

    cfg.mode = WebhookMode::kAudit;
    AdmissionDecision audit = AdmitPod(c.pod, cfg, c.quota);
    ASSERT_TRUE(audit.allowed) << c.name << ": " << audit.message;
    ASSERT_EQ(audit.would_deny.size(), 1u) << c.name;
    EXPECT_EQ(audit.would_deny[0].reason, c.reason) << c.name;
    EXPECT_EQ(audit.would_deny[0].message, enforce.message) << c.name;
    ASSERT_FALSE(audit.warnings.empty()) << c.name;
    const std::string& w = audit.warnings.back();
    EXPECT_NE(w.find("audit mode"), std::string::npos) << c.name << ": " << w;
    EXPECT_NE(w.find(enforce.message), std::string::npos) << c.name << ": " << w;
    ASSERT_FALSE(audit.patch.empty()) << c.name;
    EXPECT_EQ(audit.patch.back(), sched) << c.name << ": " << audit.patch.dump();
  }
  // A pod without findings gets the same answer in both modes.
  const json fine = Pod(C({{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "100"}}));
  AdmissionConfig audit_cfg;
  audit_cfg.mode = WebhookMode::kAudit;
  AdmissionDecision a = AdmitPod(fine, audit_cfg, std::nullopt);
  AdmissionDecision e = AdmitPod(fine, AdmissionConfig{}, std::nullopt);
  EXPECT_TRUE(a.allowed);
  EXPECT_TRUE(a.would_deny.empty());
  EXPECT_TRUE(a.warnings.empty());
  EXPECT_EQ(a.patch, e.patch);
}

// What audit mode never admits: what HAMi's webhook refuses too (privileged vGPU containers,
// spec.nodeName), even when the values cannot be read; what acts outside the tenant's container
// (the system's annotations, NVIDIA_VISIBLE_DEVICES); malformed requests; and updates of the
// system's annotations by tenants. Each is refused as in enforce mode, with no finding.
TEST(Admission, AuditStillRefusesWhatActsBeyondThePodsOwnContainer) {
  AdmissionConfig cfg;
  cfg.mode = WebhookMode::kAudit;
  json privileged = C({{"nvidia.com/gpu", "1"}});
  privileged["securityContext"] = {{"privileged", true}};
  json preset = Pod(C({{"nvidia.com/gpu", "1"}}));
  preset["spec"]["nodeName"] = "node-1";
  json bad_and_privileged = C({{"nvidia.com/gpu", "two"}});
  bad_and_privileged["securityContext"] = {{"privileged", true}};
  json bad_and_preset = Pod(C({{"nvidia.com/gpu", "two"}}));
  bad_and_preset["spec"]["nodeName"] = "node-1";
  json forged = Pod(C({{"nvidia.com/gpu", "1"}}));
  forged["metadata"]["annotations"] = {{"hami.io/vgpu-devices-to-allocate", "GPU-a,NVIDIA,1,1:;"}};
  json forged_no_gpu = Pod({{"name", "c"}, {"image", "x"}});
  forged_no_gpu["metadata"]["annotations"] = forged["metadata"]["annotations"];
  json visible = C({{"nvidia.com/gpu", "1"}});
  visible["env"] = {{{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}},
                    {{"name", "CUDA_DISABLE_CONTROL"}, {"value", "true"}}};
  struct Case {
    const char* name;
    json pod;
    const char* want;
  };
  const Case cases[] = {
      {"privileged", Pod(privileged), "privileged"},
      {"nodeName preset", preset, "spec.nodeName=node-1"},
      {"unreadable values, privileged", Pod(bad_and_privileged), "privileged"},
      {"unreadable values, nodeName", bad_and_preset, "spec.nodeName=node-1"},
      {"system annotation", forged, "annotation hami.io/vgpu-devices-to-allocate"},
      {"system annotation, no vGPU", forged_no_gpu, "annotation hami.io/vgpu-devices-to-allocate"},
      {"NVIDIA_VISIBLE_DEVICES", Pod(visible), "NVIDIA_VISIBLE_DEVICES"},
      {"not a pod", json("x"), "no pod object"},
  };
  for (const Case& c : cases) {
    AdmissionDecision d = AdmitPod(c.pod, cfg, std::nullopt);
    EXPECT_FALSE(d.allowed) << c.name;
    EXPECT_NE(d.message.find(c.want), std::string::npos) << c.name << ": " << d.message;
    EXPECT_EQ(d.patch, json::array()) << c.name;
    EXPECT_TRUE(d.would_deny.empty()) << c.name;
  }
  // NVIDIA_VISIBLE_DEVICES is refused on its own; the in-container variable beside it is not
  // what the message is about.
  AdmissionDecision v = AdmitPod(Pod(visible), cfg, std::nullopt);
  EXPECT_EQ(v.message.find("CUDA_DISABLE_CONTROL"), std::string::npos) << v.message;

  json before = Pod(C({{"nvidia.com/gpu", "1"}}));
  json after = forged;
  AdmissionDecision update = AdmitPodUpdate(before, after, "alice", cfg);
  EXPECT_FALSE(update.allowed);
  EXPECT_NE(update.message.find("hami.io/vgpu-devices-to-allocate"), std::string::npos)
      << update.message;
}

TEST(Admission, WebhookModeNames) {
  EXPECT_EQ(*ParseWebhookMode("enforce"), WebhookMode::kEnforce);
  EXPECT_EQ(*ParseWebhookMode("audit"), WebhookMode::kAudit);
  for (const char* bad : {"", "warn", "AUDIT", "enforce "}) {
    Result<WebhookMode> m = ParseWebhookMode(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().message().find("enforce"), std::string::npos);
    EXPECT_NE(m.status().message().find("audit"), std::string::npos);
  }
  EXPECT_EQ(AuditReasonName(AuditReason::kInvalidValue), "invalid-value");
  EXPECT_EQ(AuditReasonName(AuditReason::kOverride), "override");
  EXPECT_EQ(AuditReasonName(AuditReason::kQuota), "quota");
}

}  // namespace
}  // namespace vgpu::sched
