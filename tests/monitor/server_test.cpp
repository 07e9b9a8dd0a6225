#include "monitor/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <mutex>

#include "core/base/listen_address.h"
#include "core/monitor/snapshot_json.h"

namespace vgpu::monitor {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

NodeSnapshot OneContainer(int64_t time_ms) {
  NodeSnapshot s;
  s.node = "node-1";
  s.time_unix_ms = time_ms;
  GpuView& g = s.gpus.emplace_back();
  g.uuid = "GPU-00000000-0000-0000-0000-000000000000";
  g.type = "NVIDIA H100 80GB HBM3";
  g.memory_total_bytes = 1 << 30;
  g.memory_used_bytes = 1 << 20;
  g.utilization_percent = 12;
  ContainerGpuView& c = g.containers.emplace_back();
  c.namespace_name = "default";
  c.pod = "p";
  c.pod_uid = "uid-1";
  c.container = "main";
  c.memory_used_bytes = 4096;
  c.memory_limit_bytes = 1 << 29;
  c.sm_limit_percent = 30;
  c.sharing = Sharing::kAlone;
  c.processes.push_back({.pid = 7, .host_pid = 7007, .memory_bytes = 4096});
  return s;
}

// A server over a snapshot the test can swap.
class MonitorServerTest : public ::testing::Test {
 protected:
  void StartServer(MonitorServerOptions o = {}) {
    o.metrics_bind = "127.0.0.1:0";
    auto s = MonitorServer::Start(o, [this] {
      std::lock_guard lock(mu_);
      return snapshot_;
    });
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  void SetSnapshot(NodeSnapshot s) {
    std::lock_guard lock(mu_);
    snapshot_ = std::move(s);
  }

  std::mutex mu_;
  NodeSnapshot snapshot_;
  std::unique_ptr<MonitorServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(MonitorServerTest, MetricsAreTheSnapshotsPageInTextFormat) {
  StartServer();
  SetSnapshot(OneContainer(NowMs()));
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(
      res->body.find(
          R"(hami_vgpu_memory_used_bytes{container="main",device_uuid="GPU-00000000-0000-0000-0000-000000000000",namespace="default",pod="p",vdevice_index="0",zone="vGPU"} 4096)"),
      std::string::npos)
      << res->body;
  EXPECT_EQ(res->body.find("HostGPUMemoryUsage"), std::string::npos);
}

TEST_F(MonitorServerTest, LegacyMetricsOnRequest) {
  StartServer({.legacy_metrics = true});
  SetSnapshot(OneContainer(NowMs()));
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_NE(res->body.find("\nHostGPUMemoryUsage{"), std::string::npos) << res->body;
  EXPECT_NE(res->body.find("\nhami_host_gpu_memory_used_bytes{"), std::string::npos);
}

TEST_F(MonitorServerTest, SnapshotApiIsTheJsonForm) {
  StartServer();
  const NodeSnapshot want = OneContainer(NowMs());
  SetSnapshot(want);
  auto res = client_->Get("/api/v1/snapshot");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(res->body, SnapshotToJson(want));
  Result<NodeSnapshot> back = SnapshotFromJson(res->body);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->gpus.size(), 1U);
  ASSERT_EQ(back->gpus[0].containers.size(), 1U);
  EXPECT_EQ(back->gpus[0].containers[0].processes[0].host_pid, 7007);
}

TEST_F(MonitorServerTest, HealthzWaitsForTheFirstTickAndNoticesAStuckOne) {
  StartServer({.stale_after = std::chrono::milliseconds(30000)});
  auto res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_EQ(res->body, "waiting for the first tick\n");

  SetSnapshot(OneContainer(NowMs()));
  res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "ok\n");

  SetSnapshot(OneContainer(NowMs() - 120'000));
  res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
  EXPECT_NE(res->body.find("last tick 1"), std::string::npos) << res->body;
}

TEST_F(MonitorServerTest, WithoutStaleLimitAnOldTickIsStillHealthy) {
  StartServer();
  SetSnapshot(OneContainer(NowMs() - 3'600'000));
  auto res = client_->Get("/healthz");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(MonitorServerTest, OtherPathsAreNotFound) {
  StartServer();
  auto res = client_->Get("/api/v1/nothing");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  res = client_->Post("/metrics", "", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_NE(res->status, 200);
}

TEST(MonitorServerStart, BadOrTakenAddressesAreErrors) {
  const auto source = [] { return NodeSnapshot{}; };
  auto bad = MonitorServer::Start({.metrics_bind = "127.0.0.1:http"}, source);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--metrics-bind"), std::string::npos)
      << bad.status().ToString();

  auto first = MonitorServer::Start({.metrics_bind = "127.0.0.1:0"}, source);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = MonitorServer::Start(
      {.metrics_bind = "127.0.0.1:" + std::to_string((*first)->port())}, source);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("cannot listen"), std::string::npos)
      << second.status().ToString();
}

// docs/security.md: by default the monitor listens on every interface on HAMi's port 9394 (its
// Service, NodePort 31992, and Prometheus reach it there), plain HTTP without authentication.
TEST(MonitorServerStart, DefaultAddressIsHamisPortOnEveryInterface) {
  Result<ListenAddress> a = ParseListenAddress(MonitorServerOptions{}.metrics_bind);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->host, "0.0.0.0");
  EXPECT_EQ(a->port, 9394);
}

}  // namespace
}  // namespace vgpu::monitor
