// The scheduler's listeners against bad clients: oversized bodies, silent connections, hundreds of
// idle connections next to the kubelet's probe (net/http_limits.h, docs/reliability.md).

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fake_cluster_api.h"
#include "net/http_limits.h"
#include "scheduler/server.h"
#include "test_objects.h"
#include "tests/net/raw_http_client.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;
using RawClient = net::testing::RawHttpClient;

class ServerLimitsTest : public ::testing::Test {
 protected:
  ServerLimitsTest() : api_(&model_), extender_(ExtenderOptions{}, model_, api_, metrics_) {}
  void TearDown() override {
    if (server_) server_->Stop();
  }
  void Start(ServerOptions o) {
    o.metrics_bind = "";
    Result<std::unique_ptr<Server>> s = Server::Start(std::move(o), extender_, model_, metrics_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
  }
  ClusterModel model_;
  testing::FakeClusterApi api_;
  SchedulerMetrics metrics_;
  Extender extender_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerLimitsTest, OversizedBodiesAreRefusedWith413) {
  Start(ServerOptions{});
  // kube-scheduler's limit as the head announces it: refused before a byte of it is read.
  const size_t over = net::kMaxRequestBodyBytes + 1;
  RawClient raw(server_->http_port());
  ASSERT_TRUE(
      raw.Send("POST /filter HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
               "Content-Length: " +
               std::to_string(over) + "\r\n\r\n"));
  const RawClient::Response r = raw.Read();
  EXPECT_EQ(r.status, 413);
  EXPECT_NE(r.body.find("request body of " + std::to_string(over) +
                        " bytes is over this listener's limit of " +
                        std::to_string(net::kMaxRequestBodyBytes) + " bytes"),
            std::string::npos)
      << r.body;
  EXPECT_TRUE(raw.WaitClosed());
  EXPECT_EQ(metrics_.bad_requests.load(), 0);  // never reached the verbs
}

TEST_F(ServerLimitsTest, AnOversizedReviewSentWholeIsRefusedToo) {
  ServerOptions o;
  o.limits.max_body_bytes = 64 << 10;
  Start(o);
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"request",
                  {{"uid", "u1"},
                   {"kind", {{"kind", "Pod"}}},
                   {"object", testing::GpuPod("p", {{"nvidia.com/gpu", "1"}})}}}};
  review["request"]["object"]["metadata"]["annotations"]["big"] = std::string(80 << 10, 'x');
  httplib::Client c("127.0.0.1", server_->http_port());
  auto r = c.Post("/webhook", review.dump(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  review["request"]["object"]["metadata"]["annotations"].erase("big");
  r = c.Post("/webhook", review.dump(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["response"]["uid"], "u1");
}

TEST_F(ServerLimitsTest, AnIdleConnectionIsClosedAfterTheReadTimeout) {
  ServerOptions o;
  o.limits.request_timeout = std::chrono::milliseconds(300);
  Start(o);
  RawClient silent(server_->http_port());
  ASSERT_TRUE(silent.connected());
  EXPECT_TRUE(silent.WaitClosed()) << "a connection that sent nothing was kept open";
  // One that started a request and stopped is told why.
  RawClient stalled(server_->http_port());
  ASSERT_TRUE(stalled.Send("POST /bind HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{"));
  const RawClient::Response r = stalled.Read();
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(r.body, "request not received whole within 300 ms\n");
}

// With cpp-httplib's pool (one thread per connection, 64 threads), 200 silent connections held
// every thread for its keep-alive timeout and /healthz queued behind them for seconds.
TEST_F(ServerLimitsTest, ProbesAndVerbsAnswerWhile200ConnectionsIdle) {
  Start(ServerOptions{});
  api_.PutNode(testing::GpuNode("n1", 1));
  json pod = testing::GpuPod("p", {{"nvidia.com/gpu", "1"}});
  api_.PutPod(pod);
  std::vector<RawClient> idle;
  for (int i = 0; i < 200; ++i) {
    idle.emplace_back(server_->http_port());
    ASSERT_TRUE(idle.back().connected()) << i;
    if (i % 2 == 0) {
      ASSERT_TRUE(idle.back().Send("POST /filter HTTP/1.1\r\nHost: t\r\n"));  // never finished
    }
  }
  httplib::Client c("127.0.0.1", server_->http_port());
  c.set_connection_timeout(5);
  c.set_read_timeout(5);
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  auto ready = c.Get("/readyz");
  ASSERT_TRUE(ready) << httplib::to_string(ready.error());
  EXPECT_EQ(ready->status, 503);
  auto f = c.Post("/filter", testing::FilterArgs(pod, {"n1"}).dump(), "application/json");
  ASSERT_TRUE(f) << httplib::to_string(f.error());
  EXPECT_EQ(json::parse(f->body)["nodenames"], json::array({"n1"}));
}

// Issue 42, item 1: an AdmissionReview nested 135,000 levels deep (280 KB) overflowed the
// scheduler's stack when the webhook copied the pod. It is refused while parsed (at level 129) and
// denied by its uid, so that the API server refuses the pod whatever the failurePolicy; the
// scheduler goes on serving.
TEST_F(ServerLimitsTest, AReviewNestedDeeperThanAnyPodIsDeniedAndTheSchedulerLives) {
  Start(ServerOptions{});
  const std::string levels(135'000, '[');
  const std::string deep =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
      R"("request":{"uid":"deep-1","kind":{"kind":"Pod"},"operation":"CREATE",)"
      R"("object":{"metadata":{"name":"p"},"spec":)" +
      levels + std::string(levels.size(), ']') + "}}}";
  ASSERT_GT(deep.size(), 270'000u);
  httplib::Client c("127.0.0.1", server_->http_port());
  c.set_read_timeout(30);
  auto r = c.Post("/webhook", deep, "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200) << r->body;
  const json answer = json::parse(r->body);
  EXPECT_EQ(answer["response"]["uid"], "deep-1");
  EXPECT_EQ(answer["response"]["allowed"], false);
  EXPECT_EQ(answer["response"]["status"]["code"], 400);
  EXPECT_EQ(answer["response"]["status"]["message"],
            "vgpu-scheduler refuses this object: AdmissionReview nests arrays and objects deeper "
            "than 128 levels, the limit for one document");
  // The same depth where no uid can be found, and at the extender: 400 naming the problem.
  r = c.Post("/webhook", levels + std::string(levels.size(), ']'), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("deeper than 128 levels"), std::string::npos) << r->body;
  r = c.Post("/filter", R"({"pod":)" + levels + std::string(levels.size(), ']') + "}",
             "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("request body nests arrays and objects deeper than 128 levels"),
            std::string::npos)
      << r->body;
  EXPECT_EQ(metrics_.bad_requests.load(), 3u);
  // Still serving.
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"request",
                  {{"uid", "u2"},
                   {"kind", {{"kind", "Pod"}}},
                   {"object", testing::GpuPod("p", {{"nvidia.com/gpu", "1"}})}}}};
  r = c.Post("/webhook", review.dump(), "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["response"]["allowed"], true);
}

// Readiness tells the truth about the listener: while every worker is busy and the queue is full
// (here one worker, waiting in a bind for a node lock), /readyz is 503 and says why, and /healthz
// (liveness) stays 200; once the worker is free, ready again.
TEST_F(ServerLimitsTest, ReadinessFailsWhileTheListenerRefusesRequests) {
  ServerOptions o;
  o.worker_threads = 1;
  o.limits.max_queued_requests = 0;
  Start(o);
  server_->SetReady(true);
  json locked = testing::GpuNode("n1", 1);
  locked["metadata"]["annotations"]["hami.io/mutex.lock"] = "2099-01-01T00:00:00Z,default,owner";
  api_.PutNode(locked);
  json owner = testing::GpuPod("owner", {});
  owner["metadata"]["annotations"] = {{"hami.io/bind-phase", "allocating"}};
  api_.PutPod(owner);
  const json pod = testing::GpuPod("p", {{"nvidia.com/gpu", "1"}});
  api_.PutPod(pod);
  httplib::Client c("127.0.0.1", server_->http_port());
  c.set_read_timeout(30);
  auto ready = c.Get("/readyz");
  ASSERT_TRUE(ready) << httplib::to_string(ready.error());
  EXPECT_EQ(ready->status, 200) << ready->body;
  int bind_status = 0;
  std::thread binder([&] {
    httplib::Client b("127.0.0.1", server_->http_port());
    b.set_read_timeout(30);
    auto r = b.Post("/bind", testing::BindArgs(pod, "n1").dump(), "application/json");
    bind_status = r ? r->status : -1;
  });
  while (model_.reservation_count() == 0) std::this_thread::yield();  // waiting for the lock
  ready = c.Get("/readyz");
  ASSERT_TRUE(ready) << httplib::to_string(ready.error());
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "not taking requests now: all 1 workers busy and 0 requests waiting\n");
  auto health = c.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  api_.PutNode(testing::GpuNode("n1", 1));  // the lock released
  binder.join();
  EXPECT_EQ(bind_status, 200);
  for (int i = 0; i < 500; ++i) {
    ready = c.Get("/readyz");
    if (ready && ready->status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200) << ready->body;
}

}  // namespace
}  // namespace vgpu::scheduler
