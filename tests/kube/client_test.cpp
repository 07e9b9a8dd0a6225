#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kube/http_transport.h"
#include "tests/kube/test_server.h"

namespace vgpu::kube {
namespace {

using nlohmann::json;

std::vector<std::string> Names(const json& list) {
  std::vector<std::string> out;
  for (const auto& item : list["items"]) out.push_back(item["metadata"]["name"]);
  return out;
}

TEST_F(ClientFixture, CreateGetListDelete) {
  auto created = client_->Create(kPods, "default", Pod("p1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE((*created)["metadata"]["creationTimestamp"].get<std::string>().empty());
  std::string rv1 = (*created)["metadata"]["resourceVersion"];

  auto got = client_->Get(kPods, "default", "p1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["metadata"]["uid"], (*created)["metadata"]["uid"]);

  json p2 = Pod("p2");
  p2["metadata"]["namespace"] = "other";
  ASSERT_TRUE(client_->Create(kPods, "other", p2).ok());
  EXPECT_EQ(Names(*client_->List(kPods, "default")), std::vector<std::string>{"p1"});
  auto all = client_->List(kPods, "");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->at("items").size(), 2u);
  EXPECT_GT(std::stoll(all->at("metadata").at("resourceVersion").get<std::string>()),
            std::stoll(rv1));

  auto dup = client_->Create(kPods, "default", Pod("p1"));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(dup.status().message().find("HTTP 409"), std::string::npos);
  EXPECT_NE(dup.status().message().find("already exists"), std::string::npos);

  ASSERT_TRUE(client_->Delete(kPods, "default", "p1").ok());
  auto gone = client_->Get(kPods, "default", "p1");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_NE(gone.status().message().find("GET /api/v1/namespaces/default/pods/p1: HTTP 404"),
            std::string::npos)
      << gone.status().message();
  EXPECT_NE(gone.status().message().find("pods \"p1\" in namespace \"default\" not found"),
            std::string::npos);
  EXPECT_EQ(client_->Delete(kPods, "default", "p1").code(), StatusCode::kNotFound);
}

TEST_F(ClientFixture, LabelAndFieldSelectors) {
  ASSERT_TRUE(
      client_->Create(kPods, "default", Pod("a", "node-1", {{"app", "x"}, {"gpu", "on"}})).ok());
  ASSERT_TRUE(client_->Create(kPods, "default", Pod("b", "node-2", {{"app", "y"}})).ok());
  ASSERT_TRUE(client_->Create(kPods, "default", Pod("c", "", {{"app", "x"}})).ok());
  struct Case {
    ListOptions options;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {{"app=x", "", "", 0}, {"a", "c"}},
      {{"app!=x", "", "", 0}, {"b"}},
      {{"gpu", "", "", 0}, {"a"}},
      {{"!gpu", "", "", 0}, {"b", "c"}},
      {{"app in (x,y),gpu", "", "", 0}, {"a"}},
      {{"", "spec.nodeName=node-2", "", 0}, {"b"}},
      {{"", "spec.nodeName=", "", 0}, {"c"}},
      {{"app=x", "spec.nodeName!=", "", 0}, {"a"}},
      {{"", "metadata.name=b,status.phase=Pending", "", 0}, {"b"}},
      {{"", "status.phase=Running", "", 0}, {}},
  };
  for (const auto& c : cases) {
    auto list = client_->List(kPods, "default", c.options);
    ASSERT_TRUE(list.ok()) << list.status().ToString();
    EXPECT_EQ(Names(*list), c.want)
        << c.options.label_selector << " / " << c.options.field_selector;
  }
  auto bad = client_->List(kPods, "default", {"a b c", "", "", 0});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("invalid label selector"), std::string::npos);
}

TEST_F(ClientFixture, MergePatchWithResourceVersionPrecondition) {
  auto pod = client_->Create(kPods, "default", Pod("p"));
  ASSERT_TRUE(pod.ok());
  std::string rv = (*pod)["metadata"]["resourceVersion"];
  auto patched =
      client_->PatchAnnotations(kPods, "default", "p", {{"hami.io/bind-phase", "allocating"}}, rv);
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ((*patched)["metadata"]["annotations"]["hami.io/bind-phase"], "allocating");
  EXPECT_NE((*patched)["metadata"]["resourceVersion"], rv);
  // The same stale precondition now conflicts, and nothing changes.
  auto stale =
      client_->PatchAnnotations(kPods, "default", "p", {{"hami.io/bind-phase", "failed"}}, rv);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(stale.status().message().find("HTTP 409 Conflict"), std::string::npos);
  EXPECT_NE(stale.status().message().find("the object has been modified"), std::string::npos);
  EXPECT_EQ((*client_->Get(kPods, "default", "p"))["metadata"]["annotations"]["hami.io/bind-phase"],
            "allocating");
  // Removal with null, unconditional.
  auto removed =
      client_->PatchAnnotations(kPods, "default", "p", {{"hami.io/bind-phase", std::nullopt}});
  ASSERT_TRUE(removed.ok());
  EXPECT_FALSE((*removed)["metadata"]["annotations"].contains("hami.io/bind-phase"));
  // Patching status through the subresource.
  auto st =
      client_->MergePatch(kPods, "default", "p", {{"status", {{"phase", "Running"}}}}, "status");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ((*st)["status"]["phase"], "Running");
}

TEST_F(ClientFixture, JsonPatchTestOpAndEscaping) {
  auto node = client_->Create(kNodes, "",
                              {{"metadata", {{"name", "n1"}, {"annotations", json::object()}}}});
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  std::string rv = (*node)["metadata"]["resourceVersion"];
  json ops = json::array({TestResourceVersionOp(rv),
                          {{"op", "add"},
                           {"path", "/metadata/annotations/hami.io~1mutex.lock"},
                           {"value", "2024-05-01T10:20:30Z,default,p"}}});
  auto locked = client_->JsonPatch(kNodes, "", "n1", ops);
  ASSERT_TRUE(locked.ok()) << locked.status().ToString();
  EXPECT_EQ((*locked)["metadata"]["annotations"]["hami.io/mutex.lock"],
            "2024-05-01T10:20:30Z,default,p");
  // A second taker with the old resourceVersion loses.
  auto lost = client_->JsonPatch(kNodes, "", "n1", ops);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(lost.status().message().find("HTTP 409"), std::string::npos);
  // Replace, remove; removing a missing path is an invalid patch (422).
  ASSERT_TRUE(
      client_
          ->JsonPatch(kNodes, "", "n1",
                      json::array({{{"op", "remove"},
                                    {"path", "/metadata/annotations/hami.io~1mutex.lock"}}}))
          .ok());
  auto invalid = client_->JsonPatch(
      kNodes, "", "n1",
      json::array({{{"op", "remove"}, {"path", "/metadata/annotations/hami.io~1mutex.lock"}}}));
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(invalid.status().message().find("HTTP 422"), std::string::npos);
}

TEST_F(ClientFixture, BindingEventsLeases) {
  ASSERT_TRUE(client_->Create(kPods, "default", Pod("p")).ok());
  ASSERT_TRUE(client_->Bind("default", "p", "node-7").ok());
  EXPECT_EQ((*client_->Get(kPods, "default", "p"))["spec"]["nodeName"], "node-7");
  Status again = client_->Bind("default", "p", "node-8");
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(again.message().find("already assigned to node \"node-7\""), std::string::npos);
  EXPECT_EQ(client_->Bind("default", "nope", "node-7").code(), StatusCode::kNotFound);

  auto ev = client_->CreateEvent("default", {{"metadata", {{"generateName", "p."}}},
                                             {"involvedObject", {{"kind", "Pod"}, {"name", "p"}}},
                                             {"reason", "Scheduled"},
                                             {"message", "bound to node-7"}});
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ((*ev)["metadata"]["name"].get<std::string>().rfind("p.", 0), 0u);
  EXPECT_EQ(client_->List(kEvents, "default")->at("items").size(), 1u);

  EXPECT_EQ(client_->GetLease("kube-system", "vgpu-scheduler").status().code(),
            StatusCode::kNotFound);
  auto lease = client_->CreateLease(
      "kube-system", {{"metadata", {{"name", "vgpu-scheduler"}}},
                      {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}});
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ((*lease)["apiVersion"], "coordination.k8s.io/v1");
  json renewed = *lease;
  renewed["spec"]["holderIdentity"] = "b";
  auto updated = client_->UpdateLease("kube-system", renewed);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ((*client_->GetLease("kube-system", "vgpu-scheduler"))["spec"]["holderIdentity"], "b");
  // Updating from the stale copy (old resourceVersion) conflicts: leader election stays safe.
  auto stale = client_->UpdateLease("kube-system", renewed);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(ClientFixture, ServerErrorsCarryStatusAndCodes) {
  server_->FailNextRequests(1, 500);
  auto r = client_->Get(kNodes, "", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("HTTP 500"), std::string::npos);
  EXPECT_NE(r.status().message().find("injected failure"), std::string::npos);
  server_->FailNextRequests(1, 403);
  EXPECT_EQ(client_->List(kNodes, "").status().code(), StatusCode::kPermissionDenied);
  server_->FailNextRequests(1, 429);
  EXPECT_EQ(client_->List(kNodes, "").status().code(), StatusCode::kUnavailable);
  server_->DropNextRequests(1);
  auto dropped = client_->List(kNodes, "");
  ASSERT_FALSE(dropped.ok());
  EXPECT_EQ(dropped.status().code(), StatusCode::kUnavailable) << dropped.status().ToString();
  // And the client recovers on the next call.
  EXPECT_TRUE(client_->List(kNodes, "").ok());
  // Unreachable server: a transport error naming the address.
  ClientConfig cfg;
  cfg.server = "http://127.0.0.1:1";
  auto dead = Client::New(cfg);
  ASSERT_TRUE(dead.ok());
  auto unreachable = (*dead)->List(kNodes, "");
  ASSERT_FALSE(unreachable.ok());
  EXPECT_EQ(unreachable.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(unreachable.status().message().find("127.0.0.1:1"), std::string::npos);
  EXPECT_FALSE(Client::New(ClientConfig{}).ok());
}

// An error answer is read whatever its body holds (found by fuzz_kube_status: a Status whose
// message was a number threw out of StatusFromHttp).
TEST(StatusFromHttp, ReadsAnyBody) {
  const struct {
    long code;
    std::string body;
    StatusCode want;
    const char* message;
  } cases[] = {
      {409, R"({"kind":"Status","message":"pods \"p\" already exists","reason":"AlreadyExists"})",
       StatusCode::kAlreadyExists, "PUT /x: HTTP 409 Conflict: pods \"p\" already exists"},
      {409, R"({"kind":"Status","message":409,"reason":["AlreadyExists"]})",
       StatusCode::kFailedPrecondition, "PUT /x: HTTP 409 Conflict: {\"kind\""},
      {500, "[" + std::string(200, '[') + std::string(201, ']'), StatusCode::kUnavailable,
       "PUT /x: HTTP 500 Internal Server Error: [[[["},
      {502, "<html>Bad Gateway</html>", StatusCode::kUnavailable,
       "PUT /x: HTTP 502: <html>Bad Gateway</html>"},
  };
  for (const auto& c : cases) {
    const Status s = StatusFromHttp("PUT", "/x", HttpResponse{c.code, c.body});
    EXPECT_EQ(s.code(), c.want) << s.ToString();
    EXPECT_EQ(s.message().rfind(c.message, 0), 0u) << s.message();
  }
}

TEST_F(ClientFixture, ConcurrentCallersAndRateLimiterCounts) {
  ClientConfig cfg;
  cfg.server = server_->url();
  cfg.qps = 1000;
  cfg.burst = 1000;  // large enough that nothing waits: we count, not time
  auto client = Client::New(cfg);
  ASSERT_TRUE(client.ok());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string name = "p-" + std::to_string(t) + "-" + std::to_string(i);
        if (!(*client)->Create(kPods, "default", Pod(name)).ok()) ++failures;
        if (!(*client)->Get(kPods, "default", name).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(client_->List(kPods, "default")->at("items").size(),
            size_t{kThreads} * size_t{kPerThread});
  EXPECT_EQ((*client)->rate_limiter().granted(), kThreads * kPerThread * 2);
  EXPECT_EQ((*client)->rate_limiter().throttled(), 0);
}

TEST_F(ClientFixture, TokenFileReReadWhenItChanges) {
  char tmpl[] = "/tmp/vgpu-token-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  std::string token = dir + "/token";
  std::ofstream(token) << "first\n";
  ClientConfig cfg;
  cfg.server = server_->url();
  cfg.token_file = token;
  cfg.bearer_token = "ignored";
  auto client = Client::New(cfg);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->List(kNodes, "").ok());
  EXPECT_EQ(server_->last_authorization(), "Bearer first");
  // kubelet replaces the file atomically; a new inode and size.
  std::ofstream(dir + "/token.new") << "second-token\n";
  std::filesystem::rename(dir + "/token.new", token);
  ASSERT_TRUE((*client)->List(kNodes, "").ok());
  EXPECT_EQ(server_->last_authorization(), "Bearer second-token");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::kube
