#include "deviceplugin/allocator.h"

#include <gtest/gtest.h>

#include "memory_cluster.h"

namespace vgpu::deviceplugin {
namespace {

using testing::MemoryCluster;

constexpr const char* kLock = "2026-11-21T20:00:00Z,default,p";

nlohmann::json NodeJson(const std::string& lock) {
  nlohmann::json n = {{"metadata", {{"name", "n1"}, {"annotations", nlohmann::json::object()}}}};
  if (!lock.empty()) n["metadata"]["annotations"]["hami.io/mutex.lock"] = lock;
  return n;
}

// The GPUs a node registers (its inventory), `mem` MiB each.
codec::NodeInventory Registered(const std::vector<std::string>& uuids, int64_t mem = 16384) {
  codec::NodeInventory inv;
  for (const auto& u : uuids) {
    codec::DeviceInfo d;
    d.id = u;
    d.devmem = mem;
    inv.push_back(d);
  }
  return inv;
}

// The resources a container asks for, as the scheduler read them when it wrote `entry` (its
// count, memory and cores): Allocate checks the entry against them.
nlohmann::json AsksOf(const codec::ContainerDevices& entry) {
  if (entry.empty()) return nlohmann::json::object();
  return {{"limits",
           {{"nvidia.com/gpu", std::to_string(entry.size())},
            {"nvidia.com/gpumem", std::to_string(entry[0].mem_mib)},
            {"nvidia.com/gpucores", std::to_string(entry[0].cores)}}}};
}

nlohmann::json PodJson(const std::string& name, const std::string& to_allocate,
                       const std::vector<std::string>& init = {},
                       const std::vector<std::string>& app = {"main"}) {
  nlohmann::json p = {{"metadata",
                       {{"name", name},
                        {"namespace", "default"},
                        {"uid", "uid-" + name},
                        {"annotations",
                         {{"hami.io/bind-phase", "allocating"},
                          {"hami.io/vgpu-node", "n1"},
                          {"hami.io/bind-time", "100"},
                          {"hami.io/vgpu-devices-to-allocate", to_allocate},
                          {"hami.io/vgpu-devices-allocated", to_allocate}}}}},
                      {"spec", {{"nodeName", "n1"}, {"containers", nlohmann::json::array()}}},
                      {"status", {{"phase", "Pending"}}}};
  auto entries = codec::DecodePodDevices(to_allocate);
  size_t k = 0;
  const auto asks = [&] {
    const size_t i = k++;
    return entries.ok() && i < entries->size() ? AsksOf((*entries)[i]) : nlohmann::json::object();
  };
  for (const auto& c : init) {
    p["spec"]["initContainers"].push_back({{"name", c}, {"resources", asks()}});
  }
  for (const auto& c : app) p["spec"]["containers"].push_back({{"name", c}, {"resources", asks()}});
  return p;
}

struct Fixture {
  MemoryCluster cluster;
  Allocator allocator;
  std::vector<std::string> prepared;
  std::vector<allocate::KubeletAnswer> kubelet_holds;  // what kubelet's checkpoint records
  explicit Fixture(const std::string& lock = kLock) : allocator(cluster, Config()) {
    cluster.PutNode(NodeJson(lock));
    allocator.SetNodeGpus(Registered({"GPU-a", "GPU-b"}));
  }
  AllocatorConfig Config() {
    AllocatorConfig c;
    c.node = "n1";
    c.response.libvgpu_version = "1.0";
    c.new_cache_id = [] { return std::string("cache"); };
    c.prepare_host = [this](const std::string& uid, const std::string& name) {
      prepared.push_back(uid + "_" + name);
      return Status::Ok();
    };
    c.kubelet_answers = [this] {
      return Result<std::vector<allocate::KubeletAnswer>>(kubelet_holds);
    };
    return c;
  }
  std::string PodAnn(const char* key) {
    auto p = cluster.Pod("default", "p");
    return p["metadata"]["annotations"].value(key, std::string("<absent>"));
  }
  bool LockHeld() {
    return cluster.Node("n1")["metadata"]["annotations"].contains("hami.io/mutex.lock");
  }
};

TEST(Allocator, SingleContainerSucceedsAndReleasesLock) {
  Fixture f;
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,3000,30:;"));
  auto r = f.allocator.Allocate({{"GPU-a-0"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");
  EXPECT_EQ((*r)[0].envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-a");
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success");
  EXPECT_EQ(f.PodAnn("hami.io/vgpu-devices-to-allocate"), ";");
  EXPECT_EQ(f.PodAnn("hami.io/vgpu-devices-allocated"), "GPU-a,NVIDIA,3000,30:;");
  EXPECT_FALSE(f.LockHeld());
  EXPECT_EQ(f.prepared, std::vector<std::string>{"uid-p_main"});
  // The lock names the pod: one GET, no list of the node's pods.
  EXPECT_EQ(f.cluster.pod_gets(), 1);
  EXPECT_EQ(f.cluster.pod_lists(), 0);
}

TEST(Allocator, InitAndEmptyEntriesAreSkippedContainerByContainer) {
  Fixture f;
  // init container without GPU, two app containers with GPUs.
  f.cluster.PutPod(PodJson("p", ";GPU-a,NVIDIA,1000,0:;GPU-a,NVIDIA,2000,0:GPU-b,NVIDIA,2000,0:;",
                           {"init"}, {"app1", "app2"}));
  auto first = f.allocator.Allocate({{"GPU-a-1"}});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(f.PodAnn("hami.io/vgpu-devices-to-allocate"),
            ";;GPU-a,NVIDIA,2000,0:GPU-b,NVIDIA,2000,0:;");
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "allocating");
  EXPECT_TRUE(f.LockHeld());
  auto second = f.allocator.Allocate({{"GPU-a-2", "GPU-b-2"}});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)[0].envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-a,GPU-b");
  EXPECT_EQ(f.PodAnn("hami.io/vgpu-devices-to-allocate"), ";;;");
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success");
  EXPECT_FALSE(f.LockHeld());
  EXPECT_EQ(f.prepared, (std::vector<std::string>{"uid-p_app1", "uid-p_app2"}));
}

TEST(Allocator, SeveralContainerRequestsInOneCall) {
  Fixture f;
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,1,0:;GPU-b,NVIDIA,2,0:;", {}, {"c1", "c2"}));
  auto r = f.allocator.Allocate({{"GPU-a-0"}, {"GPU-b-0"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "2m");
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success");
}

struct BadCase {
  const char* name;
  std::string to_allocate;
  std::vector<std::vector<std::string>> replicas;
  const char* message_fragment;
};

TEST(Allocator, BadInputMarksPodFailedReleasesLockAndExplains) {
  const std::vector<BadCase> cases = {
      {"gpu not on node", "GPU-zz,NVIDIA,1000,0:;", {{"GPU-a-0"}}, "GPU-zz"},
      {"count mismatch", "GPU-a,NVIDIA,1000,0:;", {{"GPU-a-0", "GPU-b-0"}}, "kubelet allocated 2"},
      {"malformed annotation", "GPU-a,NVIDIA,notanumber,0:;", {{"GPU-a-0"}}, "malformed"},
      {"nothing left", ";", {{"GPU-a-0"}}, "no device list entry is left"},
      {"more entries than containers",
       ";GPU-a,NVIDIA,1,0:;",
       {{"GPU-a-0"}},
       "no matching container"},
  };
  for (const auto& c : cases) {
    Fixture f;
    f.cluster.PutPod(PodJson("p", c.to_allocate));
    auto r = f.allocator.Allocate(c.replicas);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.status().message().find(c.message_fragment), std::string::npos)
        << c.name << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("default/p"), std::string::npos) << c.name;
    EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "failed") << c.name;
    EXPECT_EQ(f.PodAnn("hami.io/vgpu-devices-to-allocate"), c.to_allocate)
        << c.name << ": the list must be left unchanged";
    EXPECT_FALSE(f.LockHeld()) << c.name;
  }
}

TEST(Allocator, MissingPodReleasesLockAndSaysSo) {
  Fixture f;
  auto r = f.allocator.Allocate({{"GPU-a-0"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("no pod bound to node n1"), std::string::npos);
  EXPECT_FALSE(f.LockHeld());
}

TEST(Allocator, UnreachableApiServerIsUnavailable) {
  Fixture f;
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,1,0:;"));
  f.cluster.SetReachable(false);
  auto r = f.allocator.Allocate({{"GPU-a-0"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("API server"), std::string::npos);
  f.cluster.SetReachable(true);
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "allocating");  // nothing was written
}

TEST(Allocator, LockOfAnotherPodIsNotReleased) {
  Fixture f("2026-11-21T20:00:00Z,default,other");
  f.cluster.PutPod(PodJson("other", "GPU-b,NVIDIA,1,0:;"));
  auto other = f.cluster.Pod("default", "other");
  other["metadata"]["annotations"]["hami.io/bind-phase"] = "success";  // not allocating
  f.cluster.PutPod(other);
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,1,0:;"));
  auto r = f.allocator.Allocate({{"GPU-a-0"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success");
  EXPECT_TRUE(f.LockHeld());
}

TEST(Allocator, LegacyOwnerlessLockIsReleased) {
  Fixture f("2026-11-21T20:00:00Z");
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,1,0:;"));
  ASSERT_TRUE(f.allocator.Allocate({{"GPU-a-0"}}).ok());
  EXPECT_FALSE(f.LockHeld());
  EXPECT_EQ(f.cluster.pod_lists(), 1);  // no owner in the lock: found through the list
}

// A pod bound and deleted at once: kubelet still admits it and its Allocate, finding only the
// next pod, gets that pod's answer. kubelet's checkpoint then shows the answer held by the deleted
// pod; the next pod's own Allocate gets the same answer again, ahead of the lock owner bound after.
TEST(Allocator, AnswerKubeletGaveToAnotherPodIsRepeatedForItsPod) {
  Fixture f;
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,3000,30:;"));
  ASSERT_TRUE(f.allocator.Allocate({{"GPU-a-0"}}).ok());  // the deleted pod's call
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success");
  f.kubelet_holds = {{"uid-v", "main", "nvidia.com/gpu", codec::ContainerDirName{"uid-p", "main"}}};

  auto q = PodJson("q", "GPU-b,NVIDIA,1000,10:;");
  q["metadata"]["annotations"]["hami.io/bind-time"] = "200";
  f.cluster.PutPod(q);
  f.cluster.PutNode(NodeJson("2026-11-21T20:00:01Z,default,q"));

  auto again = f.allocator.Allocate({{"GPU-a-3"}});  // p's own call
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-a");
  EXPECT_EQ((*again)[0].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");
  // q and the lock are untouched.
  auto q_now = f.cluster.Pod("default", "q");
  EXPECT_EQ(q_now["metadata"]["annotations"]["hami.io/bind-phase"], "allocating");
  EXPECT_EQ(q_now["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"],
            "GPU-b,NVIDIA,1000,10:;");
  EXPECT_TRUE(f.LockHeld());

  // kubelet now holds p's own answer: nothing is owed, q's call gets q's devices.
  f.kubelet_holds.push_back(
      {"uid-p", "main", "nvidia.com/gpu", codec::ContainerDirName{"uid-p", "main"}});
  auto next = f.allocator.Allocate({{"GPU-b-0"}});
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ((*next)[0].envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-b");
  EXPECT_FALSE(f.LockHeld());
}

TEST(Allocator, UnreadableKubeletRecordIsIgnored) {
  Fixture f;
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,3000,30:;"));
  AllocatorConfig c = f.Config();
  c.kubelet_answers = [] {
    return Result<std::vector<allocate::KubeletAnswer>>(Unavailable("permission denied"));
  };
  Allocator allocator(f.cluster, c);
  allocator.SetNodeGpus(Registered({"GPU-a"}));
  ASSERT_TRUE(allocator.Allocate({{"GPU-a-0"}}).ok());
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success");
}

// kubelet admits a pod that was deleted meanwhile: its pod-resources list shows that pod without
// devices, the API server no longer has it, and the lock names the next pod. The call is refused
// and the next pod keeps its answer and the lock (the heuristics alone gave it the next pod's).
TEST(Allocator, DeletedPodKubeletAdmitsIsRefusedAndTheLockOwnerKeepsItsAnswer) {
  Fixture f;  // the lock names p
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,3000,30:;"));
  AllocatorConfig c = f.Config();
  std::vector<allocate::KubeletPod> kubelet = {{"default", "victim", true}};
  c.kubelet_pods = [&kubelet] { return Result<std::vector<allocate::KubeletPod>>(kubelet); };
  Allocator allocator(f.cluster, c);
  allocator.SetNodeGpus(Registered({"GPU-a"}));

  auto refused = allocator.Allocate({{"GPU-a-0"}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("default/victim"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "allocating");
  EXPECT_EQ(f.PodAnn("hami.io/vgpu-devices-to-allocate"), "GPU-a,NVIDIA,3000,30:;");
  EXPECT_TRUE(f.LockHeld());

  // kubelet drops the deleted pod and admits p: p gets its own answer and releases the lock.
  kubelet = {{"default", "p", true}};
  auto own = allocator.Allocate({{"GPU-a-0"}});
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success");
  EXPECT_FALSE(f.LockHeld());
}

// Two pods wait on the node; kubelet admits q, bound later (it admits the pods of one update in
// creation order). Bind time and the lock say p; kubelet's list says q, and q's answer is given.
TEST(Allocator, PodKubeletListsAsAdmittedWinsOverLockAndBindTime) {
  Fixture f;  // the lock names p
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,3000,30:;"));
  auto q = PodJson("q", "GPU-b,NVIDIA,1000,10:;");
  q["metadata"]["annotations"]["hami.io/bind-time"] = "200";
  f.cluster.PutPod(q);
  AllocatorConfig c = f.Config();
  std::vector<allocate::KubeletPod> kubelet = {{"default", "p", false}, {"default", "q", true}};
  c.kubelet_pods = [&kubelet] { return Result<std::vector<allocate::KubeletPod>>(kubelet); };
  Allocator allocator(f.cluster, c);
  allocator.SetNodeGpus(Registered({"GPU-a", "GPU-b"}));

  auto r = allocator.Allocate({{"GPU-b-0"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-b");
  EXPECT_EQ(f.cluster.Pod("default", "q")["metadata"]["annotations"]["hami.io/bind-phase"],
            "success");
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "allocating");
  EXPECT_TRUE(f.LockHeld());  // p's lock: p's own call is still to come
}

// kubelet lists the lock owner as admitted: one GET, as without kubelet's list.
TEST(Allocator, LockOwnerKubeletListsIsFoundWithOneGet) {
  Fixture f;
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,3000,30:;"));
  AllocatorConfig c = f.Config();
  c.kubelet_pods = [] {
    return Result<std::vector<allocate::KubeletPod>>(
        std::vector<allocate::KubeletPod>{{"default", "p", true}});
  };
  Allocator allocator(f.cluster, c);
  allocator.SetNodeGpus(Registered({"GPU-a"}));
  ASSERT_TRUE(allocator.Allocate({{"GPU-a-0"}}).ok());
  EXPECT_EQ(f.cluster.pod_gets(), 1);
  EXPECT_EQ(f.cluster.pod_lists(), 0);
}

// kubelet's list cannot be read: the lock and annotations decide, as before.
TEST(Allocator, UnreadableKubeletPodListFallsBackToTheLock) {
  Fixture f;
  f.cluster.PutPod(PodJson("p", "GPU-a,NVIDIA,3000,30:;"));
  AllocatorConfig c = f.Config();
  c.kubelet_pods = [] {
    return Result<std::vector<allocate::KubeletPod>>(Unavailable("no socket"));
  };
  Allocator allocator(f.cluster, c);
  allocator.SetNodeGpus(Registered({"GPU-a"}));
  ASSERT_TRUE(allocator.Allocate({{"GPU-a-0"}}).ok());
  EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success");
}

// issue 42: `nvidia.com/gpumem-percentage: "0"` was placed as 0 MiB and Allocate wrote
// CUDA_DEVICE_MEMORY_LIMIT_0=0m, which libvgpu.so (HAMi-core) reads as "unlimited". Allocate never
// writes a limit outside 1 MiB .. the GPU's memory: it refuses the call instead (fail closed).
TEST(Allocator, MemoryLimitOutsideTheGpuIsRefusedNotHandedToLibvgpu) {
  for (const char* entry :
       {"GPU-a,NVIDIA,0,0:;", "GPU-a,NVIDIA,16385,0:;", "GPU-a,NVIDIA,9223372036854775807,0:;"}) {
    Fixture f;
    auto pod = PodJson("p", entry);
    // What the pod asked, as the scheduler placed it before the fix: 0 % (= unset).
    pod["spec"]["containers"][0]["resources"] = {
        {"limits", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}}}};
    f.cluster.PutPod(pod);
    auto r = f.allocator.Allocate({{"GPU-a-0"}});
    ASSERT_FALSE(r.ok()) << entry;
    EXPECT_NE(r.status().message().find("a limit must be 1 to 16384 MiB"), std::string::npos)
        << entry << ": " << r.status().message();
    EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "failed") << entry;
    EXPECT_FALSE(f.LockHeld()) << entry;
  }
}

// The UPDATE bypass with the webhook down (failurePolicy: Ignore): the tenant rewrites
// hami.io/vgpu-devices-to-allocate between the bind and Allocate. Allocate hands the container no
// more than its own pod spec asks (the spec cannot change; kubelet allocates by it).
TEST(Allocator, RewrittenDeviceListIsCheckedAgainstThePodSpec) {
  struct Case {
    const char* name;
    const char* rewritten;  // what the tenant wrote over "GPU-a,NVIDIA,3000,30:;"
    const char* error;      // nullptr = answered
  };
  const Case cases[] = {
      {"as the scheduler wrote it", "GPU-a,NVIDIA,3000,30:;", nullptr},
      {"the whole card", "GPU-a,NVIDIA,16384,30:;", "asks for 3000 MiB on GPU GPU-a"},
      {"no compute limit", "GPU-a,NVIDIA,3000,0:;", "no compute limit"},
      {"onto the sidecar without GPUs", ";GPU-a,NVIDIA,3000,30:;", "container side of pod"},
      {"zero memory", "GPU-a,NVIDIA,0,30:;", "a limit must be 1 to 16384"},
  };
  for (const Case& c : cases) {
    Fixture f;
    auto pod = PodJson("p", c.rewritten, {}, {"main", "side"});
    pod["spec"]["containers"][0]["resources"] = {
        {"limits",
         {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}}}};
    pod["spec"]["containers"][1]["resources"] = nlohmann::json::object();
    f.cluster.PutPod(pod);
    auto r = f.allocator.Allocate({{"GPU-a-0"}});
    if (c.error == nullptr) {
      ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
      EXPECT_EQ((*r)[0].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos)
        << c.name << ": " << r.status().message();
    EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "failed") << c.name;
  }
}

// The defaults the scheduler applied come from the same device-config.yaml: a pod that named only
// a count gets defaultMemory, not the card.
TEST(Allocator, DefaultsOfTheDeviceConfigBoundWhatASpecLeavesOut) {
  for (int64_t granted : {5000, 16384}) {
    Fixture f;
    AllocatorConfig c = f.Config();
    c.spec.defaults.mem_mib = 5000;
    Allocator allocator(f.cluster, c);
    allocator.SetNodeGpus(Registered({"GPU-a"}));
    auto pod = PodJson("p", "GPU-a,NVIDIA," + std::to_string(granted) + ",0:;");
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}}}};
    f.cluster.PutPod(pod);
    EXPECT_EQ(allocator.Allocate({{"GPU-a-0"}}).ok(), granted == 5000) << granted;
  }
}

TEST(NewUuid4, IsVersion4AndUnique) {
  std::string a = NewUuid4(), b = NewUuid4();
  ASSERT_EQ(a.size(), 36u);
  EXPECT_EQ(a[14], '4');
  EXPECT_TRUE(a[19] == '8' || a[19] == '9' || a[19] == 'a' || a[19] == 'b') << a;
  EXPECT_NE(a, b);
}

// MPS node: the container is answered as an MPS client; a pod that asked hami-core, or a
// container granted two GPUs, is refused before anything is prepared on the host and the bind
// fails (the scheduler never places them here: such an entry was written by someone else).
TEST(Allocator, MpsNodeAnswersClientsAndRefusesWhatItCannotServe) {
  struct Case {
    const char* name;
    const char* to_allocate;
    const char* vgpu_mode;  // nullptr: no annotation
    std::vector<std::vector<std::string>> replicas;
    const char* want_error;  // nullptr: answered
  };
  const Case cases[] = {
      {"one vGPU", "GPU-a,NVIDIA,3000,30:;", nullptr, {{"GPU-a-0"}}, nullptr},
      {"asks mps", "GPU-a,NVIDIA,3000,30:;", "mps", {{"GPU-a-0"}}, nullptr},
      {"asks hami-core",
       "GPU-a,NVIDIA,3000,30:;",
       "hami-core",
       {{"GPU-a-0"}},
       "this node runs its GPUs in mode mps"},
      {"two GPUs",
       "GPU-a,NVIDIA,3000,30:GPU-b,NVIDIA,3000,30:;",
       nullptr,
       {{"GPU-a-0", "GPU-b-0"}},
       "granted 2 GPUs on an MPS node"},
  };
  for (const Case& c : cases) {
    Fixture f;
    AllocatorConfig cfg = f.Config();
    cfg.response.operating_mode = "mps";
    cfg.response.mps_root = "/run/vgpu-mps";
    Allocator mps(f.cluster, cfg);
    mps.SetNodeGpus(Registered({"GPU-a", "GPU-b"}));
    nlohmann::json pod = PodJson("p", c.to_allocate);
    if (c.vgpu_mode != nullptr)
      pod["metadata"]["annotations"]["nvidia.com/vgpu-mode"] = c.vgpu_mode;
    f.cluster.PutPod(pod);
    auto r = mps.Allocate(c.replicas);
    if (c.want_error == nullptr) {
      ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
      EXPECT_EQ((*r)[0].envs.at("VGPU_SHARING_MODE"), "mps") << c.name;
      EXPECT_EQ((*r)[0].envs.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "30") << c.name;
      EXPECT_EQ((*r)[0].envs.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=3000M") << c.name;
      EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "success") << c.name;
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.status().message().find(c.want_error), std::string::npos)
        << c.name << ": " << r.status().message();
    EXPECT_TRUE(f.prepared.empty()) << c.name;
    EXPECT_EQ(f.PodAnn("hami.io/bind-phase"), "failed") << c.name;
  }
}

}  // namespace
}  // namespace vgpu::deviceplugin
