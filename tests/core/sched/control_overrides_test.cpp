#include "core/sched/control_overrides.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vgpu::sched {
namespace {

using nlohmann::json;

json Env(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

json Container(const std::string& name, json env) {
  return {{"name", name}, {"env", std::move(env)}};
}

json Pod(json annotations, json labels = json::object()) {
  return {{"metadata",
           {{"name", "p"},
            {"namespace", "team"},
            {"annotations", std::move(annotations)},
            {"labels", std::move(labels)}}}};
}

// Every name the webhook guards is refused by default, named in the message with how to allow
// it; the user inputs beside them pass.
TEST(ControlOverrides, DefaultRefusesEveryControlledName) {
  struct Case {
    const char* name;
    json annotations;
    json labels;
    json env;          // of the one vGPU container
    const char* want;  // "" = allowed
  };
  const Case cases[] = {
      {"nothing set", json::object(), json::object(), json::array(), ""},
      {"user annotations and env pass",
       {{"hami.io/gpu-scheduler-policy", "binpack"},
        {"hami.io/node-scheduler-policy", "spread"},
        {"nvidia.com/use-gputype", "H100"},
        {"nvidia.com/nouse-gputype", "T4"},
        {"hami.io/device-scoring-weights", "slot=1,core=1,memory=1"}},
       {{"app", "x"}},
       {Env("CUDA_TASK_PRIORITY", "0"), Env("LIBCUDA_LOG_LEVEL", "2"),
        Env("ACTIVE_OOM_KILLER", "true"), Env("CUDA_VISIBLE_DEVICES", "0"),
        Env("LD_PRELOAD", "/lib/libjemalloc.so"), Env("VGPU_SM_STATS", "1"),
        Env("CUDA_DEVICE_MEMORY_LIMITED", "x")},  // not a member of the family
       ""},
      {"devices to allocate",
       {{"hami.io/vgpu-devices-to-allocate", "GPU-a,NVIDIA,80000,100:;"}},
       json::object(),
       json::array(),
       "annotation hami.io/vgpu-devices-to-allocate ("},
      {"devices allocated",
       {{"hami.io/vgpu-devices-allocated", ";"}},
       json::object(),
       json::array(),
       "annotation hami.io/vgpu-devices-allocated"},
      {"node",
       {{"hami.io/vgpu-node", "n1"}},
       json::object(),
       json::array(),
       "annotation hami.io/vgpu-node"},
      {"node label",
       json::object(),
       {{"hami.io/vgpu-node", "n1"}},
       json::array(),
       "label hami.io/vgpu-node"},
      {"time",
       {{"hami.io/vgpu-time", "1"}},
       json::object(),
       json::array(),
       "annotation hami.io/vgpu-time"},
      {"bind phase",
       {{"hami.io/bind-phase", "allocating"}},
       json::object(),
       json::array(),
       "annotation hami.io/bind-phase"},
      {"bind time",
       {{"hami.io/bind-time", "0"}},
       json::object(),
       json::array(),
       "annotation hami.io/bind-time"},
      {"requeue nudge",
       {{"vgpu.io/capacity-freed-at", "1"}},
       json::object(),
       json::array(),
       "annotation vgpu.io/capacity-freed-at"},
      {"disable control, any value",
       json::object(),
       json::object(),
       {Env("CUDA_DISABLE_CONTROL", "false")},
       "container c env CUDA_DISABLE_CONTROL (the device"},
      {"memory limit",
       json::object(),
       json::object(),
       {Env("CUDA_DEVICE_MEMORY_LIMIT", "0")},
       "env CUDA_DEVICE_MEMORY_LIMIT ("},
      {"memory limit per device",
       json::object(),
       json::object(),
       {Env("CUDA_DEVICE_MEMORY_LIMIT_0", "80g")},
       "env CUDA_DEVICE_MEMORY_LIMIT_0 ("},
      {"sm limit per device",
       json::object(),
       json::object(),
       {Env("CUDA_DEVICE_SM_LIMIT_3", "0")},
       "env CUDA_DEVICE_SM_LIMIT_3 ("},
      {"sm limit",
       json::object(),
       json::object(),
       {Env("CUDA_DEVICE_SM_LIMIT", "100")},
       "env CUDA_DEVICE_SM_LIMIT ("},
      {"shared region",
       json::object(),
       json::object(),
       {Env("CUDA_DEVICE_MEMORY_SHARED_CACHE", "/tmp/mine")},
       "env CUDA_DEVICE_MEMORY_SHARED_CACHE"},
      {"peer dir",
       json::object(),
       json::object(),
       {Env("VGPU_SM_PEER_DIR", "/tmp/alone")},
       "env VGPU_SM_PEER_DIR"},
      {"visible devices",
       json::object(),
       json::object(),
       {Env("NVIDIA_VISIBLE_DEVICES", "all")},
       "env NVIDIA_VISIBLE_DEVICES"},
      {"sharing mode",
       json::object(),
       json::object(),
       {Env("VGPU_SHARING_MODE", "mps")},
       "env VGPU_SHARING_MODE (mps tells libvgpu.so"},
      {"mps thread share",
       json::object(),
       json::object(),
       {Env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "100")},
       "env CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"},
      {"mps pinned memory",
       json::object(),
       json::object(),
       {Env("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=80000M")},
       "env CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"},
      {"mps pipe directory",
       json::object(),
       json::object(),
       {Env("CUDA_MPS_PIPE_DIRECTORY", "/nowhere")},
       "env CUDA_MPS_PIPE_DIRECTORY (points the container away"},
      {"core policy disable",
       json::object(),
       json::object(),
       {Env("GPU_CORE_UTILIZATION_POLICY", "disable")},
       "env GPU_CORE_UTILIZATION_POLICY (a value looser than the cluster's gpuCorePolicy"},
  };
  for (const Case& c : cases) {
    const json pod = Pod(c.annotations, c.labels);
    const json ctr = Container("c", c.env);
    const std::string got = OverrideDenial(pod, {&ctr}, "", {});
    if (std::string(c.want).empty()) {
      EXPECT_EQ(got, "") << c.name;
      continue;
    }
    EXPECT_NE(got.find(c.want), std::string::npos) << c.name << ": " << got;
    EXPECT_NE(got.find("--webhook-allow-overrides="), std::string::npos) << c.name << ": " << got;
    EXPECT_NE(got.find("--webhook-override-namespaces=team"), std::string::npos) << c.name;
  }
}

TEST(ControlOverrides, EveryOverrideIsNamedAndFamiliesAreAllowedByTheirBase) {
  const json pod = Pod({{"hami.io/bind-phase", "success"}});
  const json a = Container(
      "a", {Env("CUDA_DEVICE_MEMORY_LIMIT_0", "1g"), Env("CUDA_DEVICE_MEMORY_LIMIT_1", "1g")});
  const json b = Container("b", {Env("CUDA_DISABLE_CONTROL", "true")});
  const std::string got = OverrideDenial(pod, {&a, &b}, "", {});
  // Each name once, the family by its base, and nothing after it but the namespace hint.
  const char* hint =
      "--webhook-allow-overrides=hami.io/"
      "bind-phase,CUDA_DEVICE_MEMORY_LIMIT,CUDA_DISABLE_CONTROL, ";
  for (const char* part :
       {"annotation hami.io/bind-phase", "container a env CUDA_DEVICE_MEMORY_LIMIT_0",
        "container a env CUDA_DEVICE_MEMORY_LIMIT_1", "container b env CUDA_DISABLE_CONTROL",
        hint}) {
    EXPECT_NE(got.find(part), std::string::npos) << part << " in: " << got;
  }

  OverridePolicy some;
  some.allowed = {"CUDA_DEVICE_MEMORY_LIMIT", "hami.io/bind-phase"};
  const std::string rest = OverrideDenial(pod, {&a, &b}, "", some);
  EXPECT_NE(rest.find("CUDA_DISABLE_CONTROL"), std::string::npos) << rest;
  EXPECT_EQ(rest.find("MEMORY_LIMIT"), std::string::npos) << rest;
  EXPECT_EQ(rest.find("bind-phase"), std::string::npos) << rest;

  EXPECT_EQ(OverrideDenial(pod, {&a, &b}, "", {.allowed = {"*"}}), "");
  EXPECT_EQ(OverrideDenial(pod, {&a, &b}, "", {.namespaces = {"other", "team"}}), "");
  EXPECT_NE(OverrideDenial(pod, {&a, &b}, "", {.namespaces = {"other"}}), "");
}

// Only the containers asking for vGPU resources are handed in: the others' environment never
// reaches libvgpu.so or the device plugin.
TEST(ControlOverrides, OnlyGpuContainersEnvironmentMatters) {
  const json pod = Pod(json::object());
  EXPECT_EQ(OverrideDenial(pod, {}, "", {}), "");
  const json bare = {{"name", "c"}};
  const json env_not_list = {{"name", "c"}, {"env", 3}};
  const json odd_entry = Container("c", {json(3), {{"value", "x"}}});
  EXPECT_EQ(OverrideDenial(pod, {&bare, &env_not_list, &odd_entry}, "", {}), "");
  // A pod without metadata has nothing to refuse there (and no namespace to exempt).
  const json ctr = Container("c", {Env("CUDA_DISABLE_CONTROL", "true")});
  const std::string got = OverrideDenial(json::object(), {&ctr}, "", {});
  EXPECT_NE(got.find("CUDA_DISABLE_CONTROL"), std::string::npos);
  EXPECT_EQ(got.find("--webhook-override-namespaces"), std::string::npos) << got;
}

// GPU_CORE_UTILIZATION_POLICY: the cluster's value (the webhook adds it itself) or a stricter one
// is no override; looser, unknown under force, and valueFrom are.
TEST(ControlOverrides, CorePolicyTable) {
  struct Case {
    const char* cluster;
    json entry;
    bool refused;
  };
  const json from_secret = {{"name", "GPU_CORE_UTILIZATION_POLICY"},
                            {"valueFrom", {{"secretKeyRef", {{"name", "s"}, {"key", "k"}}}}}};
  const Case cases[] = {
      {"", Env("GPU_CORE_UTILIZATION_POLICY", "default"), false},
      {"", Env("GPU_CORE_UTILIZATION_POLICY", "force"), false},
      {"", Env("GPU_CORE_UTILIZATION_POLICY", "FORCE"), false},
      {"", Env("GPU_CORE_UTILIZATION_POLICY", "disable"), true},
      {"", Env("GPU_CORE_UTILIZATION_POLICY", "sometimes"), false},  // read as default
      {"", from_secret, true},
      {"default", Env("GPU_CORE_UTILIZATION_POLICY", "Disable"), true},
      {"force", Env("GPU_CORE_UTILIZATION_POLICY", "force"), false},
      {"force", Env("GPU_CORE_UTILIZATION_POLICY", "default"), true},
      {"force", Env("GPU_CORE_UTILIZATION_POLICY", "sometimes"), true},
      {"force", from_secret, true},
      {"disable", Env("GPU_CORE_UTILIZATION_POLICY", "disable"), false},
      {"disable", Env("GPU_CORE_UTILIZATION_POLICY", "default"), false},
      {"disable", from_secret, false},  // nothing is looser than disable
  };
  for (const Case& c : cases) {
    const json ctr = Container("c", json::array({c.entry}));
    const std::string got = OverrideDenial(Pod(json::object()), {&ctr}, c.cluster, {});
    EXPECT_EQ(!got.empty(), c.refused) << c.cluster << " " << c.entry.dump() << ": " << got;
    if (c.refused) {
      const std::string cluster = *c.cluster ? c.cluster : "default";
      EXPECT_NE(got.find("the cluster's is " + cluster), std::string::npos) << got;
    }
  }
  const json unknown = Container("c", {Env("GPU_CORE_UTILIZATION_POLICY", "sometimes")});
  EXPECT_NE(OverrideDenial(Pod(json::object()), {&unknown}, "force", {})
                .find("'sometimes' is none of default, force, disable"),
            std::string::npos);
}

TEST(ControlOverrides, PolicyValidation) {
  EXPECT_TRUE(ValidateOverridePolicy({}).ok());
  EXPECT_TRUE(ValidateOverridePolicy({.allowed = {"*", "CUDA_DISABLE_CONTROL", "hami.io/vgpu-node",
                                                  "CUDA_DEVICE_SM_LIMIT"},
                                      .namespaces = {"admins"}})
                  .ok());
  for (const OverridePolicy& bad :
       {OverridePolicy{.allowed = {"CUDA_DISABLE_CONTRL"}},
        OverridePolicy{.allowed = {"CUDA_DEVICE_SM_LIMIT_0"}},  // the family's base, not a member
        OverridePolicy{.allowed = {"LD_PRELOAD"}}, OverridePolicy{.allowed = {""}}}) {
    Status s = ValidateOverridePolicy(bad);
    ASSERT_FALSE(s.ok()) << bad.allowed[0];
    EXPECT_NE(s.message().find("is not a name the webhook guards"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("CUDA_DISABLE_CONTROL"), std::string::npos) << s.message();
  }
  EXPECT_FALSE(ValidateOverridePolicy({.namespaces = {""}}).ok());
}

constexpr const char* kScheduler = "system:serviceaccount:vgpu:vgpu-scheduler";
constexpr const char* kDevicePlugin = "system:serviceaccount:vgpu:vgpu-device-plugin";

// A pod after the scheduler's bind: the annotations the device plugin's Allocate trusts.
json Bound() {
  return Pod({{"hami.io/vgpu-node", "n1"},
              {"hami.io/vgpu-devices-allocated", "GPU-a,NVIDIA,3000,30:;"},
              {"hami.io/vgpu-devices-to-allocate", "GPU-a,NVIDIA,3000,30:;"},
              {"hami.io/bind-phase", "allocating"},
              {"hami.io/bind-time", "100"},
              {"team", "mine"}},
             {{"hami.io/vgpu-node", "n1"}});
}

// issue 42, the UPDATE bypass: a tenant who may patch its pod rewrote what Allocate trusts between
// the bind and Allocate; the webhook saw pod creation only.
TEST(ControlOverrides, UpdatesOfTheSystemsNamesOnlyFromItsAccounts) {
  const std::vector<std::string> system = {kScheduler, kDevicePlugin};
  const auto with = [](const char* field, const char* key, json value) {
    json p = Bound();
    if (value.is_null()) {
      p["metadata"][field].erase(key);
    } else {
      p["metadata"][field][key] = std::move(value);
    }
    return p;
  };
  struct Case {
    const char* name;
    json after;
    const char* user;
    const char* want;  // "" = allowed
  };
  const Case cases[] = {
      {"tenant rewrites the device list",
       with("annotations", "hami.io/vgpu-devices-to-allocate", "GPU-a,NVIDIA,16384,0:;"), "alice",
       "changes annotation hami.io/vgpu-devices-to-allocate"},
      {"tenant drops the record usage is rebuilt from",
       with("annotations", "hami.io/vgpu-devices-allocated", nullptr), "alice",
       "removes annotation hami.io/vgpu-devices-allocated"},
      {"tenant moves the pod to another node", with("labels", "hami.io/vgpu-node", "n2"), "alice",
       "changes label hami.io/vgpu-node"},
      {"tenant adds the re-queue nudge", with("annotations", "vgpu.io/capacity-freed-at", "1"),
       "alice", "adds annotation vgpu.io/capacity-freed-at"},
      {"tenant opts its pod out of the webhook", with("labels", "hami.io/webhook", "ignore"),
       "alice", "adds label hami.io/webhook"},
      {"tenant changes its own annotation", with("annotations", "team", "yours"), "alice", ""},
      {"the device plugin consumes the list",
       with("annotations", "hami.io/vgpu-devices-to-allocate", ";"), kDevicePlugin, ""},
      {"the device plugin finishes the bind", with("annotations", "hami.io/bind-phase", "success"),
       kDevicePlugin, ""},
      {"the scheduler marks the bind failed", with("annotations", "hami.io/bind-phase", "failed"),
       kScheduler, ""},
      {"another ServiceAccount", with("annotations", "hami.io/bind-phase", "success"),
       "system:serviceaccount:team:default",
       "the request came from user system:serviceaccount:team:default"},
      {"an unnamed user", with("annotations", "hami.io/bind-phase", "success"), "",
       "an unnamed user"},
  };
  for (const Case& c : cases) {
    const std::string d = UpdateDenial(Bound(), c.after, c.user, system, {});
    if (std::string(c.want).empty()) {
      EXPECT_EQ(d, "") << c.name;
      continue;
    }
    EXPECT_NE(d.find(c.want), std::string::npos) << c.name << ": " << d;
    EXPECT_NE(d.find(std::string("Only ") + kScheduler + ", " + kDevicePlugin + " may"),
              std::string::npos)
        << c.name << ": " << d;
  }
  // Several at once are all named; the admin's allowances apply as on creation.
  json forged = with("annotations", "hami.io/vgpu-devices-to-allocate", "GPU-b,NVIDIA,1,0:;");
  forged["metadata"]["annotations"]["hami.io/bind-phase"] = "allocating2";
  const std::string both = UpdateDenial(Bound(), forged, "alice", system, {});
  EXPECT_NE(both.find("hami.io/vgpu-devices-to-allocate"), std::string::npos) << both;
  EXPECT_NE(both.find("hami.io/bind-phase"), std::string::npos) << both;
  EXPECT_NE(
      both.find("--webhook-allow-overrides=hami.io/vgpu-devices-to-allocate,hami.io/bind-phase"),
      std::string::npos)
      << both;
  EXPECT_EQ(UpdateDenial(Bound(), forged, "alice", system, {.namespaces = {"team"}}), "");
  EXPECT_EQ(UpdateDenial(Bound(), forged, "alice", system,
                         {.allowed = {"hami.io/vgpu-devices-to-allocate", "hami.io/bind-phase"}}),
            "");
  // No accounts configured: fail closed, and say which flag to set.
  const std::string closed = UpdateDenial(Bound(), forged, kScheduler, {}, {});
  EXPECT_NE(closed.find("--webhook-system-accounts=<namespace>:<scheduler's ServiceAccount>"),
            std::string::npos)
      << closed;
  // No old object (a malformed review): every system name present counts as added.
  EXPECT_NE(UpdateDenial(json(), Bound(), "alice", system, {}).find("adds annotation"),
            std::string::npos);
}

TEST(ControlOverrides, ServiceAccountUser) {
  EXPECT_EQ(*ServiceAccountUser("vgpu:vgpu-scheduler"),
            "system:serviceaccount:vgpu:vgpu-scheduler");
  for (const char* bad : {"", "vgpu", ":name", "ns:", "a:b:c", "ns/name", "ns:na me"}) {
    auto r = ServiceAccountUser(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("<namespace>:<name>"), std::string::npos);
  }
}

}  // namespace
}  // namespace vgpu::sched
