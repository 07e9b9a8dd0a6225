// Leader election of vgpu-scheduler replicas against the in-process API server (sim/apiserver):
// electors sharing one Lease, a leader that stops renewing or loses the API server, following the
// pod's kube-scheduler, and the bind gate of two whole services. Short timings (2 s lease,
// 1.5 s renew deadline, 200 ms retry) with generous bounds for a loaded 2-core machine.

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "kube/client.h"
#include "scheduler/leader_elector.h"
#include "scheduler/scheduler_service.h"
#include "sim/apiserver/api_server.h"
#include "test_objects.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

const sched::LeaseTiming kTiming{std::chrono::seconds(2), milliseconds(1500), milliseconds(200)};

template <typename F>
bool WaitFor(F f, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!f()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

std::unique_ptr<kube::Client> NewClient(const std::string& url) {
  kube::ClientConfig cfg;
  cfg.server = url;
  cfg.qps = 0;
  auto c = kube::Client::New(cfg);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// Forwards requests to the API server until cut; then answers 503 (a partitioned replica).
class CuttableProxy {
 public:
  explicit CuttableProxy(int upstream_port) : upstream_(upstream_port) {
    const auto forward = [this](const httplib::Request& req, httplib::Response& res) {
      if (cut_.load()) {
        res.status = 503;
        res.set_content(R"({"kind":"Status","status":"Failure","message":"cut","code":503})",
                        "application/json");
        return;
      }
      httplib::Client c("127.0.0.1", upstream_);
      const std::string type = req.get_header_value("Content-Type");
      httplib::Result r = req.method == "GET"   ? c.Get(req.target)
                          : req.method == "PUT" ? c.Put(req.target, req.body, type)
                                                : c.Post(req.target, req.body, type);
      if (!r) {
        res.status = 502;
        return;
      }
      res.status = r->status;
      res.set_content(r->body, "application/json");
    };
    server_.Get(".*", forward);
    server_.Put(".*", forward);
    server_.Post(".*", forward);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~CuttableProxy() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void Cut() { cut_.store(true); }

 private:
  int upstream_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> cut_{false};
};

struct Lines {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> Sink() {
    return [this](const std::string& l) {
      std::lock_guard lock(mu);
      lines.push_back(l);
    };
  }
  bool Has(const std::string& needle) {
    std::lock_guard lock(mu);
    for (const auto& l : lines) {
      if (l.find(needle) != std::string::npos) return true;
    }
    return false;
  }
};

LeaderElectionOptions Options(const std::string& pod, Lines& log) {
  LeaderElectionOptions o;
  o.enabled = true;
  o.lease_namespace = "kube-system";
  o.lease_name = "vgpu-scheduler";
  o.pod = pod;
  o.identity = NewLeaderIdentity(pod);
  o.timing = kTiming;
  o.log = log.Sink();
  return o;
}

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto api = sim::ApiServer::Start();
    ASSERT_TRUE(api.ok()) << api.status().ToString();
    api_ = std::move(*api);
  }
  std::unique_ptr<sim::ApiServer> api_;

  // Two schedulers against the API server: `a` started first and leading (may bind), then `b`.
  struct Pair {
    std::unique_ptr<kube::Client> client_a, client_b;  // outlive the services below
    Lines log_a, log_b;
    std::unique_ptr<SchedulerService> a, b;
  };
  void StartPair(Pair& pair) {
    pair.client_a = NewClient(api_->url());
    pair.client_b = NewClient(api_->url());
    SchedulerServiceOptions sa, sb;
    sa.feed.write_handshake = sb.feed.write_handshake = false;
    sa.leader = Options("pod-a", pair.log_a);
    sb.leader = Options("pod-b", pair.log_b);
    auto a = SchedulerService::Start(sa, *pair.client_a);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    pair.a = std::move(*a);
    ASSERT_TRUE(WaitFor([&] { return pair.a->BindGate().ok(); }, milliseconds(10000)));
    auto b = SchedulerService::Start(sb, *pair.client_b);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    pair.b = std::move(*b);
  }
};

TEST_F(LeaderElectionTest, ExactlyOneLeaderAndTakeoverWhenTheLeaderStopsRenewing) {
  auto client_a = NewClient(api_->url()), client_b = NewClient(api_->url());
  Lines log_a, log_b;
  LeaderElectionOptions oa = Options("pod-a", log_a), ob = Options("pod-b", log_b);
  oa.release_on_stop = false;  // a crash: nobody hands the lease back
  ob.release_on_stop = false;
  auto a = LeaderElector::Start(*client_a, oa, nullptr);
  auto b = LeaderElector::Start(*client_b, ob, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(WaitFor([&] { return (*a)->IsLeader() || (*b)->IsLeader(); }, milliseconds(10000)));
  // For a while (several retry periods and lease renewals) exactly one leads.
  for (int i = 0; i < 100; ++i) {
    EXPECT_NE((*a)->IsLeader(), (*b)->IsLeader()) << "sample " << i;
    std::this_thread::sleep_for(milliseconds(10));
  }
  LeaderElector& leader = (*a)->IsLeader() ? **a : **b;
  LeaderElector& other = (*a)->IsLeader() ? **b : **a;
  Lines& leader_log = (*a)->IsLeader() ? log_a : log_b;
  EXPECT_TRUE(leader_log.Has("became leader"));
  EXPECT_TRUE(leader_log.Has("lease=kube-system/vgpu-scheduler"));

  const auto stopped = Clock::now();
  leader.Stop();
  ASSERT_TRUE(WaitFor([&] { return other.IsLeader(); }, milliseconds(15000)));
  const auto took = Clock::now() - stopped;
  // Not before the lease expired in the other's eyes, and within lease + retry (+ slack).
  EXPECT_GE(took, kTiming.lease_duration - kTiming.retry_period - milliseconds(100));
  EXPECT_LE(took, kTiming.lease_duration + kTiming.retry_period + milliseconds(3000));
  auto lease = api_->Get("leases", "kube-system", "vgpu-scheduler");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], other.options().identity);
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 2);
}

TEST_F(LeaderElectionTest, LeaderThatCannotRenewStepsDownBeforeTheOtherTakesOver) {
  CuttableProxy proxy(api_->port());
  auto client_a = NewClient(proxy.url()), client_b = NewClient(api_->url());
  Lines log_a, log_b;
  auto a = LeaderElector::Start(*client_a, Options("pod-a", log_a), nullptr);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(WaitFor([&] { return (*a)->IsLeader(); }, milliseconds(10000)));
  auto b = LeaderElector::Start(*client_b, Options("pod-b", log_b), nullptr);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(WaitFor([&] { return log_b.Has("standing by"); }, milliseconds(5000)));
  EXPECT_TRUE(log_b.Has("reason=\"held by pod-a_"));

  const auto cut = Clock::now();
  proxy.Cut();
  // a steps down at its renew deadline, on its own clock, without any answer from the server.
  ASSERT_TRUE(WaitFor([&] { return !(*a)->IsLeader(); }, milliseconds(5000)));
  EXPECT_LE(Clock::now() - cut, kTiming.renew_deadline + milliseconds(500));
  EXPECT_FALSE((*b)->IsLeader());
  ASSERT_TRUE(WaitFor([&] { return (*b)->IsLeader(); }, milliseconds(15000)));
  EXPECT_FALSE((*a)->IsLeader());
  ASSERT_TRUE(WaitFor([&] { return log_a.Has("lost the lease"); }, milliseconds(5000)));
  EXPECT_TRUE(log_a.Has("cannot renew it") || log_a.Has("cannot read it"));
}

TEST_F(LeaderElectionTest, FollowsThePodWhoseKubeSchedulerLeads) {
  // kube-scheduler's own Lease, renewed by "pod-b"'s kube-scheduler (identity host_uuid).
  std::atomic<bool> stop{false};
  std::mutex holder_mu;
  std::string ks_holder = "pod-b_5f2a";
  ASSERT_TRUE(api_->Seed("leases", sched::LeaseObject("kube-system", "hami-scheduler",
                                                      {ks_holder, 15, "", "", 0, ""}))
                  .ok());
  auto admin = NewClient(api_->url());
  std::thread kube_scheduler([&] {
    int n = 0;
    while (!stop.load()) {
      auto cur = admin->GetLease("kube-system", "hami-scheduler");
      if (cur.ok()) {
        json l = *cur;
        l["metadata"].erase("resourceVersion");
        std::lock_guard lock(holder_mu);
        l["spec"]["holderIdentity"] = ks_holder;
        l["spec"]["renewTime"] = "2026-11-27T10:00:0" + std::to_string(++n % 10) + ".000000Z";
        (void)admin->UpdateLease("kube-system", l);
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  auto client_a = NewClient(api_->url()), client_b = NewClient(api_->url());
  Lines log_a, log_b;
  LeaderElectionOptions oa = Options("pod-a", log_a), ob = Options("pod-b", log_b);
  oa.kube_scheduler_lease = ob.kube_scheduler_lease = "hami-scheduler";
  auto a = LeaderElector::Start(*client_a, oa, nullptr);
  ASSERT_TRUE(a.ok());
  // a alone, but pod-b's kube-scheduler leads: a stays out of the way.
  ASSERT_TRUE(WaitFor([&] { return log_a.Has("standing by"); }, milliseconds(5000)));
  EXPECT_TRUE(log_a.Has("the kube-scheduler of another pod leads"));
  EXPECT_FALSE((*a)->IsLeader());
  auto b = LeaderElector::Start(*client_b, ob, nullptr);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(WaitFor([&] { return (*b)->IsLeader(); }, milliseconds(5000)));

  // pod-a's kube-scheduler takes over: b hands the lease back, a takes it within a few retry
  // periods (no lease duration to wait out).
  const auto switched = Clock::now();
  {
    std::lock_guard lock(holder_mu);
    ks_holder = "pod-a_77c1";
  }
  ASSERT_TRUE(WaitFor([&] { return (*a)->IsLeader(); }, milliseconds(10000)));
  EXPECT_LE(Clock::now() - switched, milliseconds(1000) + 4 * kTiming.retry_period);
  EXPECT_FALSE((*b)->IsLeader());
  EXPECT_TRUE(WaitFor([&] { return log_b.Has("lost the lease"); }, milliseconds(2000)));
  stop.store(true);
  kube_scheduler.join();

  // Refused: following a Lease by the same name as our own would fight kube-scheduler for it.
  LeaderElectionOptions same = Options("pod-c", log_a);
  same.kube_scheduler_lease = same.lease_name;
  auto refused = LeaderElector::Start(*client_a, same, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("kube-scheduler's own Lease"), std::string::npos);
}

TEST_F(LeaderElectionTest, OnlyTheLeaderBindsAndTheStandbyTakesOverOnShutdown) {
  ASSERT_TRUE(api_->Seed("nodes", testing::GpuNode("n1", 2)).ok());
  json p1 = testing::GpuPod("p1", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "2000"}});
  json p2 = testing::GpuPod("p2", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "2000"}});
  p1["metadata"].erase("uid");
  p2["metadata"].erase("uid");
  auto c1 = api_->Seed("pods", p1);
  auto c2 = api_->Seed("pods", p2);
  ASSERT_TRUE(c1.ok() && c2.ok());
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(StartPair(pair));
  auto& a = pair.a;
  auto& b = pair.b;
  Lines& log_a = pair.log_a;
  Lines& log_b = pair.log_b;
  ASSERT_TRUE(a->WaitReady(std::chrono::seconds(10)));
  ASSERT_TRUE(b->WaitReady(std::chrono::seconds(10)));
  ASSERT_TRUE(WaitFor([&] { return log_b.Has("standing by"); }, milliseconds(5000)));

  // The standby is ready (it serves filter and the webhook) and says it stands by.
  httplib::Client http_b("127.0.0.1", b->port());
  auto ready = http_b.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_NE(ready->body.find("standby (held by pod-a_"), std::string::npos) << ready->body;
  // It refuses to bind and writes nothing.
  auto refused = http_b.Post("/bind", testing::BindArgs(*c1, "n1").dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_NE(json::parse(refused->body)["error"].get<std::string>().find("is not the leader"),
            std::string::npos)
      << refused->body;
  auto untouched = api_->Get("pods", "default", "p1");
  ASSERT_TRUE(untouched.ok());
  EXPECT_FALSE((*untouched)["metadata"].contains("annotations") &&
               (*untouched)["metadata"]["annotations"].contains("hami.io/vgpu-devices-allocated"));
  EXPECT_FALSE((*untouched)["spec"].contains("nodeName"));

  // The leader binds.
  httplib::Client http_a("127.0.0.1", a->port());
  auto ok = http_a.Post("/bind", testing::BindArgs(*c1, "n1").dump(), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(json::parse(ok->body)["error"], "") << ok->body;
  auto a_ready = http_a.Get("/readyz");
  ASSERT_TRUE(a_ready);
  EXPECT_NE(a_ready->body.find("leader election: leader"), std::string::npos) << a_ready->body;

  // The leader shuts down and hands the lease back: b leads within a few retry periods, re-reads
  // the pods (p1's allocation included) and binds p2.
  a->Stop();
  ASSERT_TRUE(WaitFor([&] { return b->BindGate().ok(); }, milliseconds(5000)));
  EXPECT_TRUE(log_a.Has("released the lease on shutdown"));
  ASSERT_TRUE(WaitFor(
      [&] {
        return b->model().UsageOf("n1", "GPU-n1-0").mem_mib > 0 ||
               b->model().UsageOf("n1", "GPU-n1-1").mem_mib > 0;
      },
      milliseconds(5000)));
  // The node lock p1's bind took is released by the device plugin in production; here by hand.
  json node = *api_->Get("nodes", "", "n1");
  node["metadata"]["annotations"].erase("hami.io/mutex.lock");
  node["metadata"].erase("resourceVersion");
  ASSERT_TRUE(pair.client_a->Update(kube::kNodes, "", node).ok());
  auto second = http_b.Post("/bind", testing::BindArgs(*c2, "n1").dump(), "application/json");
  ASSERT_TRUE(second);
  EXPECT_EQ(json::parse(second->body)["error"], "") << second->body;
  auto bound = api_->Get("pods", "default", "p2");
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ((*bound)["spec"]["nodeName"], "n1");
}

// Failover: the survivor's kube-scheduler may lead, and bind through the replica beside it, a
// moment before that replica may bind. kube-scheduler would park the refused pod for up to 60 s;
// the replica annotates it once it leads and has re-read the model, and kube-scheduler retries.
TEST_F(LeaderElectionTest, ABindTheStandbyRefusedIsNudgedOnceItLeads) {
  ASSERT_TRUE(api_->Seed("nodes", testing::GpuNode("n1", 1)).ok());
  json p = testing::GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "2000"}});
  p["metadata"].erase("uid");
  auto created = api_->Seed("pods", p);
  ASSERT_TRUE(created.ok());
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(StartPair(pair));
  auto& a = pair.a;
  auto& b = pair.b;
  Lines& log_b = pair.log_b;
  ASSERT_TRUE(b->WaitReady(std::chrono::seconds(10)));
  ASSERT_TRUE(WaitFor([&] { return log_b.Has("standing by"); }, milliseconds(20000)));
  const auto nudged_at = [&] {
    auto pod = api_->Get("pods", "default", "p");
    return pod.ok() ? (*pod)["metadata"]
                          .value("annotations", json::object())
                          .value(kCapacityFreedAnnotation, "")
                    : "";
  };

  httplib::Client http_b("127.0.0.1", b->port());
  auto refused = http_b.Post("/bind", testing::BindArgs(*created, "n1").dump(), "application/json");
  ASSERT_TRUE(refused);
  EXPECT_NE(json::parse(refused->body)["error"].get<std::string>().find("is not the leader"),
            std::string::npos)
      << refused->body;
  // Not while b stands by (longer than the 0.5-s settle).
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_EQ(nudged_at(), "");

  a->Stop();
  ASSERT_TRUE(WaitFor([&] { return b->BindGate().ok(); }, milliseconds(20000)));
  EXPECT_TRUE(WaitFor([&] { return !nudged_at().empty(); }, milliseconds(20000)));
  auto bound = http_b.Post("/bind", testing::BindArgs(*created, "n1").dump(), "application/json");
  ASSERT_TRUE(bound);
  EXPECT_EQ(json::parse(bound->body)["error"], "") << bound->body;
}

}  // namespace
}  // namespace vgpu::scheduler
