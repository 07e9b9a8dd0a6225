// The simulated API server at the HTTP level: what the kube client tests do not exercise.

#include <gtest/gtest.h>
#include <httplib.h>

#include "sim/apiserver/api_server.h"

namespace vgpu::sim {
namespace {

using nlohmann::json;

class HttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = ApiServer::Start();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s).value();
    http_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }
  void TearDown() override {
    http_.reset();
    server_.reset();
  }
  json Body(const httplib::Result& r) { return json::parse(r->body); }

  std::unique_ptr<ApiServer> server_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(HttpTest, StatusErrorsLookLikeKubernetes) {
  auto r = http_->Get("/api/v1/namespaces/default/pods/missing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  json st = Body(r);
  EXPECT_EQ(st["kind"], "Status");
  EXPECT_EQ(st["status"], "Failure");
  EXPECT_EQ(st["reason"], "NotFound");
  EXPECT_EQ(st["code"], 404);
  EXPECT_EQ(st["message"], "pods \"missing\" in namespace \"default\" not found");

  ASSERT_TRUE(
      server_->Seed("pods", {{"metadata", {{"name", "p"}, {"namespace", "default"}}}}).ok());
  auto dup = http_->Post("/api/v1/namespaces/default/pods", R"({"metadata":{"name":"p"}})",
                         "application/json");
  EXPECT_EQ(dup->status, 409);
  EXPECT_EQ(Body(dup)["reason"], "AlreadyExists");
  auto stale =
      http_->Patch("/api/v1/namespaces/default/pods/p", R"({"metadata":{"resourceVersion":"1"}})",
                   "application/merge-patch+json");
  EXPECT_EQ(stale->status, 409);
  EXPECT_EQ(Body(stale)["reason"], "Conflict");
  auto bad = http_->Patch("/api/v1/namespaces/default/pods/p",
                          R"([{"op":"remove","path":"/nope"}])", "application/json-patch+json");
  EXPECT_EQ(bad->status, 422);
  EXPECT_EQ(Body(bad)["reason"], "Invalid");
  EXPECT_EQ(http_->Patch("/api/v1/namespaces/default/pods/p", "{}", "text/plain")->status, 415);
  EXPECT_EQ(http_->Post("/api/v1/namespaces/default/pods", "{", "application/json")->status, 400);
  EXPECT_EQ(http_->Get("/api/v1/widgets")->status, 404);
  EXPECT_EQ(http_->Get("/api/v1/namespaces/default/nodes")->status, 404);
  EXPECT_EQ(http_->Delete("/api/v1/nodes")->status, 405);
}

TEST_F(HttpTest, StrategicMergeIsMergeAndNamespacesServed) {
  ASSERT_TRUE(
      server_->Seed("pods", {{"metadata", {{"name", "p"}, {"namespace", "default"}}}}).ok());
  auto r = http_->Patch("/api/v1/namespaces/default/pods/p", R"({"metadata":{"labels":{"a":"1"}}})",
                        "application/strategic-merge-patch+json");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(Body(r)["metadata"]["labels"]["a"], "1");
  auto ns = http_->Get("/api/v1/namespaces");
  ASSERT_EQ(ns->status, 200);
  EXPECT_EQ(Body(ns)["kind"], "NamespaceList");
  EXPECT_EQ(Body(ns)["items"].size(), 2u);
  EXPECT_EQ(http_->Get("/api/v1/namespaces/kube-system")->status, 200);
  auto created =
      http_->Post("/api/v1/namespaces", R"({"metadata":{"name":"gpu"}})", "application/json");
  EXPECT_EQ(created->status, 201);
  auto leases = http_->Get("/apis/coordination.k8s.io/v1/leases");
  ASSERT_EQ(leases->status, 200);
  EXPECT_EQ(Body(leases)["kind"], "LeaseList");
}

TEST_F(HttpTest, WatchFromZeroSendsExistingThenChangesAndTimesOut) {
  ASSERT_TRUE(
      server_->Seed("nodes", {{"metadata", {{"name", "n1"}, {"labels", {{"gpu", "on"}}}}}}).ok());
  ASSERT_TRUE(server_->Seed("nodes", {{"metadata", {{"name", "n2"}}}}).ok());
  std::string stream;
  std::thread writer([&] {
    // Runs while the watch is open; the watch ends on its own after timeoutSeconds=1.
    while (server_->active_watches() == 0) std::this_thread::yield();
    ASSERT_TRUE(
        server_->Seed("nodes", {{"metadata", {{"name", "n3"}, {"labels", {{"gpu", "on"}}}}}}).ok());
    ASSERT_TRUE(server_->Seed("nodes", {{"metadata", {{"name", "n4"}}}}).ok());
  });
  auto r =
      http_->Get("/api/v1/nodes?watch=true&resourceVersion=0&labelSelector=gpu&timeoutSeconds=1",
                 [&](const char* data, size_t len) {
                   stream.append(data, len);
                   return true;
                 });
  writer.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  std::vector<std::string> seen;
  size_t start = 0;
  while (start < stream.size()) {
    size_t nl = stream.find('\n', start);
    std::string line = stream.substr(start, nl - start);
    start = nl + 1;
    if (line.empty()) continue;
    json ev = json::parse(line);
    seen.push_back(ev["type"].get<std::string>() + " " +
                   ev["object"]["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED n1", "ADDED n3"}));
}

TEST_F(HttpTest, WatchFromCompactedVersionGetsErrorEvent410) {
  ASSERT_TRUE(server_->Seed("nodes", {{"metadata", {{"name", "n1"}}}}).ok());
  server_->CompactHistory();
  std::string stream;
  auto r = http_->Get("/api/v1/nodes?watch=true&resourceVersion=1", [&](const char* d, size_t n) {
    stream.append(d, n);
    return true;
  });
  ASSERT_TRUE(r);
  json ev = json::parse(stream.substr(0, stream.find('\n')));
  EXPECT_EQ(ev["type"], "ERROR");
  EXPECT_EQ(ev["object"]["code"], 410);
  EXPECT_EQ(ev["object"]["reason"], "Expired");
  EXPECT_EQ(http_->Get("/api/v1/nodes?watch=true&resourceVersion=abc")->status, 400);
}

TEST_F(HttpTest, InjectedFailuresAndCounters) {
  server_->FailNextRequests(2, 503);
  EXPECT_EQ(http_->Get("/api/v1/nodes")->status, 503);
  EXPECT_EQ(http_->Get("/api/v1/nodes")->status, 503);
  EXPECT_EQ(http_->Get("/api/v1/nodes")->status, 200);
  server_->DropNextRequests(1);
  auto dropped = http_->Get("/api/v1/nodes");
  EXPECT_TRUE(!dropped || dropped->body.empty());
  EXPECT_EQ(http_->Get("/api/v1/nodes")->status, 200);
  EXPECT_EQ(server_->request_count(), 5);
}

}  // namespace
}  // namespace vgpu::sim
