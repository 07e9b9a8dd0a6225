#include "monitor/kube_pod_directory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "sim/apiserver/api_server.h"

namespace vgpu::monitor {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json Pod(const std::string& name, const std::string& node, const std::string& ns = "default") {
  return {{"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"nodeName", node}, {"containers", {{{"name", "main"}, {"image", "x"}}}}}},
          {"status", {{"phase", "Running"}}}};
}

// Polls `pred` (bounded, generous); the directory fills from a watch thread.
bool Eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = 20s) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

class KubePodDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = sim::ApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    kube::ClientConfig config;
    config.server = server_->url();
    config.qps = 0;
    auto client = kube::Client::New(config);
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
    // One answer before anything else: ApiServer::Stop() called before its accept loop has begun
    // is lost (cpp-httplib), and the teardown would then wait forever.
    ASSERT_TRUE(client_->List(kube::kNamespaces, "").ok());
  }
  void TearDown() override {
    pods_.reset();
    client_.reset();
    server_.reset();
  }

  // Creates a pod through the API; returns its uid.
  std::string Create(const std::string& name, const std::string& node,
                     const std::string& ns = "default") {
    auto created = client_->Create(kube::kPods, ns, Pod(name, node, ns));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? (*created)["metadata"]["uid"].get<std::string>() : "";
  }

  void StartDirectory(KubePodDirectoryOptions o = {}) {
    o.node_name = "node-1";
    o.min_backoff = 10ms;
    o.max_backoff = 50ms;
    o.clock = [this] { return std::chrono::steady_clock::now() + skew_.load(); };
    auto d = KubePodDirectory::Start(*client_, o);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    pods_ = std::move(d).value();
  }

  // Makes every API request fail from now on and cuts the open watch (also one admitted just
  // before the failures began), so that the directory starts failing at once.
  void BreakApiServer() {
    server_->FailNextRequests(1 << 30, 503);
    server_->DisconnectWatches();
    ASSERT_TRUE(Eventually([&] { return !pods_->last_error().empty(); }));
  }

  std::unique_ptr<sim::ApiServer> server_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<KubePodDirectory> pods_;
  std::atomic<std::chrono::steady_clock::duration> skew_{std::chrono::steady_clock::duration(0)};
};

TEST_F(KubePodDirectoryTest, ListsThisNodesPodsByUid) {
  const std::string mine = Create("train-0", "node-1", "ml");
  const std::string other = Create("web", "node-2");
  const std::string pending = Create("pending", "");
  StartDirectory();
  ASSERT_TRUE(pods_->WaitForFirstList(20s));
  EXPECT_TRUE(pods_->Synced());
  EXPECT_EQ(pods_->size(), 1U);
  std::optional<PodIdentity> id = pods_->Find(mine);
  ASSERT_TRUE(id);
  EXPECT_EQ(id->namespace_name, "ml");
  EXPECT_EQ(id->name, "train-0");
  EXPECT_EQ(id->uid, mine);
  EXPECT_FALSE(pods_->Find(other));
  EXPECT_FALSE(pods_->Find(pending));
  EXPECT_FALSE(pods_->Find(""));
}

TEST_F(KubePodDirectoryTest, FollowsCreationsAndDeletions) {
  StartDirectory();
  ASSERT_TRUE(pods_->WaitForFirstList(20s));
  const std::string a = Create("a", "node-1");
  const std::string b = Create("b", "node-2");
  ASSERT_TRUE(Eventually([&] { return pods_->Find(a).has_value(); }));
  ASSERT_TRUE(client_->Delete(kube::kPods, "default", "a").ok());
  ASSERT_TRUE(Eventually([&] { return !pods_->Find(a).has_value(); }));
  EXPECT_FALSE(pods_->Find(b));
  EXPECT_TRUE(pods_->Synced());
}

TEST_F(KubePodDirectoryTest, ResumesAfterDisconnectAndRelistsAfterGone) {
  StartDirectory();
  ASSERT_TRUE(pods_->WaitForFirstList(20s));
  server_->DisconnectWatches();
  const std::string a = Create("a", "node-1");
  ASSERT_TRUE(Eventually([&] { return pods_->Find(a).has_value(); }));

  // History forgotten: the resumed watch gets 410 Gone and the directory relists; a pod deleted
  // meanwhile disappears, one created meanwhile appears.
  ASSERT_TRUE(Eventually([&] { return server_->active_watches() == 1; }));
  server_->CompactHistory();
  server_->DisconnectWatches();
  ASSERT_TRUE(client_->Delete(kube::kPods, "default", "a").ok());
  const std::string b = Create("b", "node-1");
  ASSERT_TRUE(Eventually([&] { return pods_->Find(b).has_value() && !pods_->Find(a); }));
  EXPECT_TRUE(pods_->Synced());
}

TEST_F(KubePodDirectoryTest, NotSyncedUntilTheFirstListSucceeds) {
  // Six failures keep the first list from succeeding for ~220 ms of back-off (10 ms doubling,
  // at most 50), long enough that a busy machine cannot overtake the check below.
  server_->FailNextRequests(6, 500);
  StartDirectory();
  EXPECT_FALSE(pods_->Synced());
  ASSERT_TRUE(pods_->WaitForFirstList(20s));
  EXPECT_TRUE(pods_->Synced());
}

TEST_F(KubePodDirectoryTest, StaleAfterAMinuteOfFailuresThenSyncedAtTheNextEvent) {
  const std::string a = Create("a", "node-1");
  StartDirectory();
  ASSERT_TRUE(pods_->WaitForFirstList(20s));
  BreakApiServer();
  // Failing, but not for long: the view is still trusted (and still answers).
  EXPECT_TRUE(pods_->Synced());
  EXPECT_TRUE(pods_->Find(a));
  skew_ = 61s;
  EXPECT_FALSE(pods_->Synced()) << "failing for more than a minute";
  EXPECT_TRUE(pods_->Find(a)) << "the last view still names pods";

  server_->FailNextRequests(0);
  const std::string b = Create("b", "node-1");
  ASSERT_TRUE(Eventually([&] { return pods_->Find(b).has_value(); }));
  EXPECT_TRUE(pods_->Synced());
  EXPECT_EQ(pods_->last_error(), "");
}

TEST_F(KubePodDirectoryTest, AQuietNodeIsSyncedAgainOnceAWatchRequestEndsCleanly) {
  KubePodDirectoryOptions o;
  o.watch_timeout_seconds = 1;
  StartDirectory(o);
  ASSERT_TRUE(pods_->WaitForFirstList(20s));
  BreakApiServer();
  skew_ = 61s;
  EXPECT_FALSE(pods_->Synced());
  // No pod changes on this node: only a watch request that runs its course shows the API
  // server is back.
  server_->FailNextRequests(0);
  ASSERT_TRUE(Eventually([&] { return pods_->Synced(); }));

  // A later failure counts from its own start, not from the first one.
  BreakApiServer();
  EXPECT_TRUE(pods_->Synced());
  skew_ = 61s + 61s;
  EXPECT_FALSE(pods_->Synced());
  server_->FailNextRequests(0);
}

TEST_F(KubePodDirectoryTest, NeedsANodeName) {
  auto d = KubePodDirectory::Start(*client_, {});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("node"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::monitor
