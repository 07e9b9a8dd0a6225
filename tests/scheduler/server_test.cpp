#include "scheduler/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "fake_cluster_api.h"
#include "test_objects.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;

class ServerTest : public ::testing::Test {
 protected:
  ServerTest() : api_(&model_), extender_(ExtenderOptions{}, model_, api_, metrics_) {}
  std::unique_ptr<Server> Start(ServerOptions o) {
    Result<std::unique_ptr<Server>> s = Server::Start(std::move(o), extender_, model_, metrics_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  ClusterModel model_;
  testing::FakeClusterApi api_;
  SchedulerMetrics metrics_;
  Extender extender_;
};

TEST_F(ServerTest, ExtenderVerbsOverHttp) {
  ServerOptions o;
  o.metrics_bind = "127.0.0.1:0";
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  api_.PutNode(testing::GpuNode("n1", 1));
  httplib::Client c("127.0.0.1", server->http_port());

  auto bad = c.Post("/filter", "{not json", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("not valid JSON"), std::string::npos);
  // Wrong JSON types deep inside must not crash either.
  auto odd = c.Post("/bind", R"({"podName":1,"podNamespace":[],"node":{}})", "application/json");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->status, 400);

  json pod = testing::GpuPod("p", {{"nvidia.com/gpu", "1"}});
  api_.PutPod(pod);
  auto f = c.Post("/filter", testing::FilterArgs(pod, {"n1"}).dump(), "application/json");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->status, 200);
  EXPECT_EQ(json::parse(f->body)["nodenames"], json::array({"n1"}));
  auto p = c.Post("/prioritize", testing::FilterArgs(pod, {"n1"}).dump(), "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(json::parse(p->body)[0]["host"], "n1");
  auto b = c.Post("/bind", testing::BindArgs(pod, "n1").dump(), "application/json");
  ASSERT_TRUE(b);
  EXPECT_EQ(json::parse(b->body)["error"], "");

  auto health = c.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto ready = c.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  server->SetReady(true);
  EXPECT_EQ(c.Get("/readyz")->status, 200);

  httplib::Client mc("127.0.0.1", server->metrics_port());
  auto m = mc.Get("/metrics");
  ASSERT_TRUE(m);
  for (const char* want :
       {// The first metric line is one string written as two literals.
        // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
        "hami_gpu_memory_limit_bytes{device_index=\"0\",device_type=\"NVIDIA A10\","
        "device_uuid=\"GPU-n1-0\",node=\"n1\",zone=\"vGPU\"} 25165824000",
        "hami_gpu_shared_count{device_index=\"0\",device_type=\"NVIDIA A10\","
        "device_uuid=\"GPU-n1-0\",node=\"n1\",zone=\"vGPU\"} 1",
        "hami_vgpu_memory_allocated_bytes{container_index=\"0\",device_uuid=\"GPU-n1-0\","
        "namespace=\"default\",node=\"n1\",pod=\"p\",zone=\"vGPU\"} 25165824000",
        "\nhami_build_info{", "vgpu_scheduler_filter_duration_seconds_count 1",
        "vgpu_scheduler_bind_duration_seconds_bucket{le=\"+Inf\"} 1",
        "vgpu_scheduler_node_rejections_total{reason=\"CardInsufficientMemory\"} 0",
        "vgpu_scheduler_bad_requests_total 2"}) {
    EXPECT_NE(m->body.find(want), std::string::npos) << want << "\n" << m->body;
  }
  server->Stop();
}

// An IPv4 address of this host other than loopback, or "" (then the test is skipped).
std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
    if (inet_ntop(AF_INET, &a->sin_addr, text, sizeof text) != nullptr &&
        std::string(text).rfind("127.", 0) != 0) {
      found = text;
    }
  }
  freeifaddrs(list);
  return found;
}

// The verbs answer kube-scheduler on this host only: a peer on the network (any pod, when the
// listener is on 0.0.0.0 for the kubelet's probes) gets 403 and nothing is bound; the probes and
// the webhook still answer it. --extender-allow-remote lifts it.
TEST_F(ServerTest, ExtenderVerbsAnswerLoopbackPeersOnly) {
  const std::string address = NonLoopbackAddress();
  if (address.empty()) GTEST_SKIP() << "this host has no IPv4 address besides loopback";
  api_.PutNode(testing::GpuNode("n1", 1));
  json pod = testing::GpuPod("p", {{"nvidia.com/gpu", "1"}});
  api_.PutPod(pod);
  for (bool allow_remote : {false, true}) {
    ServerOptions o;
    o.http_bind = "0.0.0.0:0";
    o.metrics_bind = "";
    o.extender_allow_remote = allow_remote;
    auto server = Start(o);
    ASSERT_NE(server, nullptr);
    httplib::Client remote(address, server->http_port());
    const int want = allow_remote ? 200 : 403;
    for (const char* path : {"/filter", "/prioritize"}) {
      auto r = remote.Post(path, testing::FilterArgs(pod, {"n1"}).dump(), "application/json");
      ASSERT_TRUE(r) << path;
      EXPECT_EQ(r->status, want) << path << ": " << r->body;
    }
    auto b = remote.Post("/bind", testing::BindArgs(pod, "n1").dump(), "application/json");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->status, want) << b->body;
    if (!allow_remote) {
      EXPECT_NE(b->body.find("only to kube-scheduler on its own host"), std::string::npos);
      EXPECT_NE(b->body.find(address), std::string::npos) << b->body;
      EXPECT_NE(b->body.find("--extender-allow-remote"), std::string::npos) << b->body;
      EXPECT_EQ(api_.Pod("default", "p")["metadata"]["annotations"].count("hami.io/bind-phase"),
                0u);
      EXPECT_EQ(remote.Get("/healthz")->status, 200);
      EXPECT_EQ(remote.Get("/readyz")->status, 503);
      json review = {{"apiVersion", "admission.k8s.io/v1"},
                     {"request", {{"uid", "u"}, {"kind", {{"kind", "Pod"}}}, {"object", pod}}}};
      EXPECT_EQ(remote.Post("/webhook", review.dump(), "application/json")->status, 200);
      // The same server answers kube-scheduler beside it.
      httplib::Client local("127.0.0.1", server->http_port());
      auto f = local.Post("/filter", testing::FilterArgs(pod, {"n1"}).dump(), "application/json");
      ASSERT_TRUE(f);
      EXPECT_EQ(f->status, 200) << f->body;
    } else {
      EXPECT_EQ(json::parse(b->body)["error"], "") << b->body;
    }
    server->Stop();
  }
}

TEST_F(ServerTest, LegacyMetricNames) {
  api_.PutNode(testing::GpuNode("n1", 1));
  const std::string page = metrics_.Render(model_, /*legacy_too=*/true);
  EXPECT_NE(page.find("GPUDeviceMemoryLimit{"), std::string::npos);
  EXPECT_NE(page.find("GPUDeviceCoreLimit{deviceidx=\"0\",devicetype=\"NVIDIA A10\","
                      "deviceuuid=\"GPU-n1-0\",nodeid=\"n1\",zone=\"vGPU\"} 100"),
            std::string::npos)
      << page;
  // Beside the current names, as HAMi writes both.
  EXPECT_NE(page.find("hami_gpu_memory_limit_bytes{"), std::string::npos) << page;
}

// A new self-signed pair as key.pem.new and cert.pem.new, put in place by Install.
std::string StageCert(const std::string& dir, const std::string& cn) {
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + cn +
                          " -keyout " + dir + "/key.pem.new -out " + dir +
                          "/cert.pem.new >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0 ? "" : "openssl failed: " + cmd;
}

bool Install(const std::string& dir, const std::string& file) {
  return std::rename((dir + "/" + file + ".new").c_str(), (dir + "/" + file).c_str()) == 0;
}

TEST_F(ServerTest, HttpsWebhookReloadsItsCertificate) {
  const char* base = std::getenv("VGPU_TEST_TMP");
  const std::string dir = std::string(base ? base : "/tmp") + "/tls-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ASSERT_EQ(StageCert(dir, "first"), "");
  ASSERT_TRUE(Install(dir, "key.pem") && Install(dir, "cert.pem"));
  ServerOptions o;
  o.http_bind = "";
  o.metrics_bind = "";
  o.https_bind = "127.0.0.1:0";
  o.tls_cert = dir + "/cert.pem";
  o.tls_key = dir + "/key.pem";
  o.tls_reload_check = std::chrono::milliseconds(20);
  auto server = Start(o);
  ASSERT_NE(server, nullptr);
  const int port = server->https_port();
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"request",
                  {{"uid", "u1"},
                   {"kind", {{"kind", "Pod"}}},
                   {"object", testing::GpuPod("p", {{"nvidia.com/gpu", "1"}})}}}};
  const auto call = [&] {
    httplib::SSLClient c("127.0.0.1", port);
    c.enable_server_certificate_verification(false);
    return c.Post("/webhook", review.dump(), "application/json");
  };
  auto r = call();
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["response"]["uid"], "u1");

  // A rotation replaces the two files one after the other. With only the key replaced the pair
  // does not match: the old listener keeps serving and nothing is reloaded.
  ASSERT_EQ(StageCert(dir, "second"), "");
  ASSERT_TRUE(Install(dir, "key.pem"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // ten checks
  EXPECT_EQ(server->tls_reloads(), 0);
  auto during = call();
  ASSERT_TRUE(during);
  EXPECT_EQ(json::parse(during->body)["response"]["uid"], "u1");
  ASSERT_TRUE(Install(dir, "cert.pem"));
  for (int i = 0; i < 500 && server->tls_reloads() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server->tls_reloads(), 1);
  EXPECT_EQ(server->https_port(), port);
  auto again = call();
  ASSERT_TRUE(again);
  EXPECT_TRUE(json::parse(again->body)["response"]["allowed"].get<bool>());
  server->Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::scheduler
