// The pod's author as the attacker (issue 42, item 2 and the UPDATE bypass). A tenant writes its
// pod's resources, annotations and, where RBAC lets it patch its own pods, later updates. Each case
// sends the abusive pod through the real admission webhook (vgpu-scheduler's HTTP listener on
// loopback, POST /webhook with an AdmissionReview as kube-apiserver sends it), the extender's
// filter and bind against the in-memory API server, and the device plugin's Allocate, and checks
// what the container would get. Figures: the decision, the webhook's latency per review (p99 over
// the repeated reviews of the case) and the scheduler process's RSS before and after.
//
// Before the fixes: `nvidia.com/gpumem-percentage: "0"` was admitted, placed as 0 MiB, handed to
// the container as CUDA_DEVICE_MEMORY_LIMIT_0=0m (libvgpu.so reads 0 as unlimited: 15 GiB taken
// of 16) and charged nothing to the quota; "0.5" GPUs rounded up to 1; and the webhook answered
// every UPDATE "allowed", so a tenant could rewrite hami.io/vgpu-devices-to-allocate between the
// bind and Allocate (the whole card, no compute limit) and Allocate handed it over.

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/codec/base64.h"
#include "deviceplugin/allocator.h"
#include "fake_cluster_api.h"
#include "memory_cluster.h"
#include "report.h"
#include "scheduler/extender.h"
#include "scheduler/server.h"
#include "test_objects.h"

namespace vgpu::adversarial {
namespace {

using nlohmann::json;
using scheduler::testing::BindArgs;
using scheduler::testing::FilterArgs;
using scheduler::testing::GpuNode;
using scheduler::testing::GpuPod;

constexpr const char* kAttacker = "a pod's author";
constexpr const char* kSchedulerSa = "system:serviceaccount:vgpu:vgpu-scheduler";
constexpr const char* kPluginSa = "system:serviceaccount:vgpu:vgpu-device-plugin";
constexpr int kRepeats = 40;  // reviews per abuse, for the latency figure
constexpr int64_t kCardMiB = 16384;

class PodAuthorAbuse : public ::testing::Test {
 protected:
  void SetUp() override {
    rss_before_ = RssKib();
    scheduler::ExtenderOptions o;
    o.system_users = {kSchedulerSa, kPluginSa};
    o.lock.wait_timeout = std::chrono::milliseconds(2000);
    extender_ = std::make_unique<scheduler::Extender>(o, model_, api_, metrics_);
    scheduler::ServerOptions so;
    so.http_bind = "127.0.0.1:0";
    so.metrics_bind = "";
    so.worker_threads = 4;
    auto server = scheduler::Server::Start(so, *extender_, model_, metrics_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->http_port());
    api_.PutNode(GpuNode("n1", 1, kCardMiB));

    deviceplugin::AllocatorConfig c;
    c.node = "n1";
    c.response.libvgpu_version = "1";
    c.new_cache_id = [] { return std::string("cache"); };
    allocator_ = std::make_unique<deviceplugin::Allocator>(node_, c);
    codec::DeviceInfo gpu;
    gpu.id = "GPU-n1-0";
    gpu.devmem = kCardMiB;
    allocator_->SetNodeGpus({gpu});
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  static json Review(const char* operation, const json& pod, const std::string& user,
                     const json& old = json()) {
    json r = {{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", "review-1"},
                {"operation", operation},
                {"kind", {{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}},
                {"namespace", pod["metadata"]["namespace"]},
                {"userInfo", {{"username", user}}},
                {"object", pod}}}};
    if (!old.is_null()) r["request"]["oldObject"] = old;
    return r;
  }

  // POSTs `review` kRepeats times to /webhook, timing each; the last answer's `response`.
  json Send(const json& review, Latencies& lat) {
    const std::string body = review.dump();
    json response;
    for (int i = 0; i < kRepeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto res = client_->Post("/webhook", body, "application/json");
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!res || res->status != 200) {
        ++lat.failed;
        continue;
      }
      lat.Add(ms);
      response = json::parse(res->body)["response"];
    }
    return response;
  }

  // The pod as the API server stores it after the webhook's patch.
  static json Patched(const json& pod, const json& response) {
    if (!response.contains("patch")) return pod;
    auto ops = codec::Base64Decode(response["patch"].get<std::string>());
    EXPECT_TRUE(ops.ok());
    return pod.patch(json::parse(*ops));
  }

  // kube-scheduler's filter and bind; true when the pod was placed.
  bool Schedule(const json& pod) {
    api_.PutPod(pod);
    const json filtered = extender_->Filter(FilterArgs(pod, {"n1"})).Json();
    if (filtered["nodenames"].empty()) return false;
    return extender_->Bind(BindArgs(pod, "n1")).Json()["error"] == "";
  }

  // kubelet on n1 admits the pod: the device plugin's Allocate, with what the API server holds.
  Result<std::vector<allocate::ContainerResponse>> Allocate(const std::string& name) {
    node_.PutNode(api_.Node("n1"));
    node_.PutPod(api_.Pod("team", name));
    return allocator_->Allocate({{"GPU-n1-0-0"}});
  }

  // The scheduler runs in this process: its RSS is the process's. Under ASan freed memory stays
  // in quarantine, so RSS grows with the reviews served without a leak (LeakSanitizer checks).
  std::string Figures(const Latencies& lat) const {
#ifdef __SANITIZE_ADDRESS__
    const char* note = " (ASan: quarantine included)";
#else
    const char* note = "";
#endif
    return lat.Text() + "; scheduler RSS " + MiB(rss_before_) + " -> " + MiB(RssKib()) + note;
  }

  scheduler::ClusterModel model_;
  scheduler::testing::FakeClusterApi api_{&model_};
  scheduler::SchedulerMetrics metrics_;
  std::unique_ptr<scheduler::Extender> extender_;
  std::unique_ptr<scheduler::Server> server_;
  std::unique_ptr<httplib::Client> client_;
  deviceplugin::testing::MemoryCluster node_;
  std::unique_ptr<deviceplugin::Allocator> allocator_;
  long rss_before_ = 0;
};

// issue 42 item 2: "0" % of the card's memory.
TEST_F(PodAuthorAbuse, ZeroPercentMemoryIsTheDefaultNeverUnlimited) {
  model_.UpsertQuota(json::parse(R"({"metadata":{"name":"q","namespace":"team"},
      "spec":{"hard":{"limits.nvidia.com/gpumem":"20000"}}})"));
  const json pod =
      GpuPod("zero", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem-percentage", "0"}}, "team");
  Latencies lat;
  const json resp = Send(Review("CREATE", pod, "alice"), lat);
  ASSERT_TRUE(resp["allowed"].get<bool>()) << resp.dump();
  ASSERT_TRUE(resp.contains("warnings"));
  EXPECT_NE(resp["warnings"][0].get<std::string>().find("0 means unset"), std::string::npos);

  ASSERT_TRUE(Schedule(Patched(pod, resp)));
  EXPECT_EQ(api_.Pod("team", "zero")["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"],
            "GPU-n1-0,NVIDIA,16384,0:;");
  EXPECT_EQ(model_.Quota("team")->used.mem_mib, kCardMiB);
  auto answer = Allocate("zero");
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ((*answer)[0].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "16384m");

  // What the old scheduler wrote for it: a 0-MiB device list. Allocate refuses to hand it over.
  json old = api_.Pod("team", "zero");
  old["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"] = "GPU-n1-0,NVIDIA,0,0:;";
  old["metadata"]["annotations"]["hami.io/bind-phase"] = "allocating";
  api_.PutPod(old);
  auto refused = Allocate("zero");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("memory limit of 0 MiB"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(lat.failed, 0u);
  Report(kAttacker,
         "nvidia.com/gpumem-percentage: \"0\" (was: 0 MiB placed, CUDA_DEVICE_MEMORY_LIMIT_0=0m = "
         "unlimited, quota 0)",
         "admitted with a warning as HAMi's unset: 16384 MiB placed and charged, limit 16384m; a "
         "0-MiB device list is refused by Allocate",
         "webhook: " + Figures(lat));
}

// Values that are not whole numbers in range: refused at admission, naming the value.
TEST_F(PodAuthorAbuse, InvalidResourceValuesAreDeniedNamingTheValue) {
  struct Abuse {
    const char* what;
    json limits;
    const char* named;  // the denial names this
  };
  const Abuse abuses[] = {
      {"negative memory",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "-1"}},
       "negative values are not allowed"},
      {"memory past int64",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "99999999999999999999"}},
       "is too large"},
      {"memory of an exbibyte",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1Ei"}},
       "more than any GPU has"},
      {"1025 GPUs", {{"nvidia.com/gpu", "1025"}}, "more than any node has"},
      {"0.5 GPU (was rounded up to 1)",
       {{"nvidia.com/gpu", "0.5"}},
       "\"0.5\" is not a whole number"},
      {"1500m cores",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "1500m"}},
       "\"1500m\" is not a whole number"},
      {"101 % cores",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpucores", "101"}},
       "above the maximum 100"},
      {"non-numeric memory",
       {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "lots"}},
       "quantity \"lots\""},
      {"empty count", {{"nvidia.com/gpu", ""}}, "no number"},
      {"JSON 2^64-1 GPUs (was read as -1)", {{"nvidia.com/gpu", UINT64_MAX}}, "is too large"},
  };
  for (const Abuse& a : abuses) {
    Latencies lat;
    const json resp = Send(Review("CREATE", GpuPod("bad", a.limits, "team"), "alice"), lat);
    ASSERT_FALSE(resp["allowed"].get<bool>()) << a.what;
    EXPECT_EQ(resp["status"]["code"], 403) << a.what;
    const std::string message = resp["status"]["message"];
    EXPECT_NE(message.find(a.named), std::string::npos) << a.what << ": " << message;
    EXPECT_NE(message.find("container \"main\""), std::string::npos) << message;
    EXPECT_EQ(lat.failed, 0u);
    Report(kAttacker, std::string("resources: ") + a.what, "denied (403): " + message,
           "webhook: " + Figures(lat));
  }
  // limits and requests that disagree (the API server would refuse it only after the webhook).
  json split = GpuPod("split", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}}, "team");
  split["spec"]["containers"][0]["resources"]["requests"] = {{"nvidia.com/gpu", "1"},
                                                             {"nvidia.com/gpumem", "16000"}};
  Latencies lat;
  const json resp = Send(Review("CREATE", split, "alice"), lat);
  ASSERT_FALSE(resp["allowed"].get<bool>());
  EXPECT_NE(resp["status"]["message"].get<std::string>().find("differ"), std::string::npos);
  Report(kAttacker, "resources: limits 1000 MiB, requests 16000 MiB",
         "denied (403): " + resp["status"]["message"].get<std::string>(),
         "webhook: " + Figures(lat));
}

// The UPDATE bypass: between the bind and Allocate the tenant rewrites the device list.
TEST_F(PodAuthorAbuse, TenantUpdatesOfTheSystemsAnnotationsAreRefused) {
  const json pod = GpuPod(
      "victim",
      {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}},
      "team");
  Latencies create;
  ASSERT_TRUE(Send(Review("CREATE", pod, "alice"), create)["allowed"].get<bool>());
  ASSERT_TRUE(Schedule(pod));
  const json bound = api_.Pod("team", "victim");
  ASSERT_EQ(bound["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"],
            "GPU-n1-0,NVIDIA,3000,30:;");

  json greedy = bound;
  greedy["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"] =
      "GPU-n1-0,NVIDIA,16384,0:;";
  Latencies tenant;
  const json refused = Send(Review("UPDATE", greedy, "alice", bound), tenant);
  ASSERT_FALSE(refused["allowed"].get<bool>()) << refused.dump();
  const std::string message = refused["status"]["message"];
  EXPECT_NE(message.find("changes annotation hami.io/vgpu-devices-to-allocate"), std::string::npos)
      << message;
  EXPECT_NE(message.find("user alice"), std::string::npos) << message;
  Report(kAttacker,
         "UPDATE of hami.io/vgpu-devices-to-allocate to the whole card, no core limit, between "
         "bind and Allocate (was: allowed)",
         "denied (403): " + message, "webhook: " + Figures(tenant));

  json opt_out = bound;
  opt_out["metadata"]["labels"]["hami.io/webhook"] = "ignore";
  Latencies label;
  const json hidden = Send(Review("UPDATE", opt_out, "alice", bound), label);
  ASSERT_FALSE(hidden["allowed"].get<bool>());
  EXPECT_NE(hidden["status"]["message"].get<std::string>().find("adds label hami.io/webhook"),
            std::string::npos);
  Report(kAttacker,
         "UPDATE adding label hami.io/webhook=ignore (later updates would skip the webhook)",
         "denied (403)", "webhook: " + Figures(label));

  // The system's own writes pass: the device plugin consumes the list, the scheduler marks a bind.
  json consumed = bound;
  consumed["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"] = ";";
  consumed["metadata"]["annotations"]["hami.io/bind-phase"] = "success";
  for (const char* system : {kPluginSa, kSchedulerSa}) {
    Latencies own;
    const json ok = Send(Review("UPDATE", consumed, system, bound), own);
    EXPECT_TRUE(ok["allowed"].get<bool>()) << system << ": " << ok.dump();
    EXPECT_FALSE(ok.contains("patch"));
    Report("vgpu itself", std::string("UPDATE of the same annotations by ") + system,
           "allowed, unpatched", "webhook: " + Figures(own));
  }
  // The pod's Allocate, with the annotations the webhook kept, gives what was asked.
  auto answer = Allocate("victim");
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ((*answer)[0].envs.at("CUDA_DEVICE_MEMORY_LIMIT_0"), "3000m");
  EXPECT_EQ((*answer)[0].envs.at("CUDA_DEVICE_SM_LIMIT"), "30");
}

// The webhook down (failurePolicy: Ignore): the rewrite reaches the API server. Allocate checks the
// entry against the container's own spec, which no update can change, and refuses.
TEST_F(PodAuthorAbuse, RewriteThatSlipsPastADownWebhookIsRefusedByAllocate) {
  const json pod = GpuPod(
      "victim",
      {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}},
      "team");
  ASSERT_TRUE(Schedule(pod));
  struct Rewrite {
    const char* what;
    const char* list;
    const char* refusal;
  };
  const Rewrite rewrites[] = {
      {"the whole card", "GPU-n1-0,NVIDIA,16384,30:;", "asks for 3000 MiB on GPU GPU-n1-0"},
      {"no compute limit", "GPU-n1-0,NVIDIA,3000,0:;", "no compute limit (0)"},
      {"0 MiB (= unlimited)", "GPU-n1-0,NVIDIA,0,30:;", "memory limit of 0 MiB"},
      {"a GPU of another node", "GPU-n9-0,NVIDIA,3000,30:;", "which node n1 does not have"},
  };
  for (const Rewrite& r : rewrites) {
    json forged = api_.Pod("team", "victim");
    forged["metadata"]["annotations"]["hami.io/vgpu-devices-to-allocate"] = r.list;
    forged["metadata"]["annotations"]["hami.io/bind-phase"] = "allocating";
    api_.PutPod(forged);
    const auto t0 = std::chrono::steady_clock::now();
    auto answer = Allocate("victim");
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(answer.ok()) << r.what;
    EXPECT_NE(answer.status().message().find(r.refusal), std::string::npos)
        << r.what << ": " << answer.status().message();
    EXPECT_EQ(node_.Pod("team", "victim")["metadata"]["annotations"]["hami.io/bind-phase"],
              "failed");
    char took[64];
    (void)std::snprintf(took, sizeof took, "Allocate refused in %.1f ms", ms);
    Report(kAttacker, std::string("webhook down: device list rewritten to ") + r.what,
           "Allocate refused, pod marked failed: " + answer.status().message(), took);
  }
}

}  // namespace
}  // namespace vgpu::adversarial
