#include "sim/cluster/extender_client.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

namespace vgpu::sim {
namespace {

using nlohmann::json;

// A real HTTP server in the test that checks what the client sends (the field names
// kube-scheduler uses) and answers like an extender would.
class FakeExtenderServer {
 public:
  FakeExtenderServer() {
    server_.Post("/filter", [this](const httplib::Request& req, httplib::Response& res) {
      last_ = json::parse(req.body);
      res.set_content(filter_answer_, "application/json");
    });
    server_.Post("/prioritize", [this](const httplib::Request& req, httplib::Response& res) {
      last_ = json::parse(req.body);
      res.set_content(R"([{"Host":"n1","Score":7},{"Host":"n2","Score":3}])", "application/json");
    });
    server_.Post("/bind", [this](const httplib::Request& req, httplib::Response& res) {
      last_ = json::parse(req.body);
      res.set_content(bind_answer_, "application/json");
    });
    server_.Post("/preempt", [this](const httplib::Request& req, httplib::Response& res) {
      last_ = json::parse(req.body);
      res.set_content(preempt_answer_, "application/json");
    });
    server_.Post("/webhook", [this](const httplib::Request& req, httplib::Response& res) {
      last_ = json::parse(req.body);
      res.set_content(webhook_answer_, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeExtenderServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  json last_;
  std::string filter_answer_;
  std::string bind_answer_ = R"({"Error":""})";
  std::string webhook_answer_;
  std::string preempt_answer_;
};

json Pod() {
  return {{"metadata", {{"name", "p"}, {"namespace", "ns"}, {"uid", "u-1"}}},
          {"spec", {{"containers", json::array()}}}};
}

TEST(ExtenderClient, FilterSendsNodeNamesAndReadsBothFailureMaps) {
  FakeExtenderServer server;
  server.filter_answer_ =
      R"({"nodes":null,"nodenames":["n2"],"failedNodes":{"n1":"CardInsufficientMemory"},)"
      R"("failedAndUnresolvableNodes":{"n3":"CardTypeMismatch"},"error":""})";
  auto client = ExtenderClient::Connect(server.url());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Result<FilterResult> r = (*client)->Filter(Pod(), {"n1", "n2", "n3"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(server.last_["pod"]["metadata"]["name"], "p");
  EXPECT_EQ(server.last_["nodenames"], json({"n1", "n2", "n3"}));
  EXPECT_TRUE(server.last_["nodes"].is_null());
  EXPECT_EQ(r->feasible, std::vector<std::string>{"n2"});
  EXPECT_EQ(r->failed.at("n1"), "CardInsufficientMemory");
  EXPECT_EQ(r->failed.at("n3"), "CardTypeMismatch");
  EXPECT_TRUE(r->error.empty());
}

// kube-scheduler 1.20 (no json tags) sends Go's field names; current extenders answer with the
// lower-case tags, which Go reads case-insensitively.
TEST(ExtenderClient, PreemptSendsTheKube120ShapeAndReadsVictims) {
  FakeExtenderServer server;
  server.preempt_answer_ =
      R"({"nodeNameToMetaVictims":{"n1":{"pods":[{"uid":"a"},{"uid":"b"}],"numPDBViolations":0}}})";
  auto client = ExtenderClient::Connect(server.url());
  ASSERT_TRUE(client.ok());
  auto r = (*client)->Preempt(Pod(), {{"n1", {}}, {"n2", {"c"}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(server.last_["Pod"]["metadata"]["uid"], "u-1");
  EXPECT_TRUE(server.last_["NodeNameToVictims"].is_null());
  EXPECT_EQ(server.last_["NodeNameToMetaVictims"]["n1"],
            json::parse(R"({"Pods": [], "NumPDBViolations": 0})"));
  EXPECT_EQ(server.last_["NodeNameToMetaVictims"]["n2"]["Pods"], json::parse(R"([{"UID": "c"}])"));
  EXPECT_EQ(*r, (std::map<std::string, std::vector<std::string>>{{"n1", {"a", "b"}}}));

  server.preempt_answer_ = R"({"nodeNameToMetaVictims":{"n1":{"pods":[{"name":"a"}]}}})";
  EXPECT_FALSE((*client)->Preempt(Pod(), {{"n1", {}}}).ok());  // a victim without a UID
  server.preempt_answer_ = R"({"error":"x"})";
  EXPECT_FALSE((*client)->Preempt(Pod(), {{"n1", {}}}).ok());
}

TEST(ExtenderClient, PrioritizeAndBindUseKubeSchedulerFieldNames) {
  FakeExtenderServer server;
  auto client = ExtenderClient::Connect(server.url());
  ASSERT_TRUE(client.ok());
  Result<std::vector<HostScore>> scores = (*client)->Prioritize(Pod(), {"n1", "n2"});
  ASSERT_TRUE(scores.ok()) << scores.status().ToString();
  ASSERT_EQ(scores->size(), 2u);
  EXPECT_EQ((*scores)[0].host, "n1");
  EXPECT_EQ((*scores)[0].score, 7);

  EXPECT_TRUE((*client)->Bind("ns", "p", "u-1", "n1").ok());
  EXPECT_EQ(server.last_,
            json({{"PodName", "p"}, {"PodNamespace", "ns"}, {"PodUID", "u-1"}, {"Node", "n1"}}));

  server.bind_answer_ = R"({"Error":"node n1 lock held by ns/q"})";
  Status s = (*client)->Bind("ns", "p", "u-1", "n1");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("lock held"), std::string::npos);
}

TEST(ExtenderClient, WebhookPatchIsApplied) {
  FakeExtenderServer server;
  // [{"op":"add","path":"/spec/schedulerName","value":"hami-scheduler"}]
  server.webhook_answer_ =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"x",)"
      R"("allowed":true,"patchType":"JSONPatch","patch":"W3sib3AiOiJhZGQiLCJwYXRoIjoiL3NwZWMvc2No)"
      R"(ZWR1bGVyTmFtZSIsInZhbHVlIjoiaGFtaS1zY2hlZHVsZXIifV0="}})";
  auto client = ExtenderClient::Connect(server.url());
  ASSERT_TRUE(client.ok());
  Result<AdmissionResult> r = (*client)->Admit(Pod());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->allowed);
  EXPECT_EQ(r->pod["spec"]["schedulerName"], "hami-scheduler");
  EXPECT_EQ(server.last_["request"]["operation"], "CREATE");
  EXPECT_EQ(server.last_["request"]["object"]["metadata"]["name"], "p");
  EXPECT_EQ(server.last_["request"]["namespace"], "ns");

  server.webhook_answer_ =
      R"({"response":{"uid":"x","allowed":false,"status":{"message":"privileged containers )"
      R"(cannot use vGPUs"}}})";
  r = (*client)->Admit(Pod());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->allowed);
  EXPECT_EQ(r->message, "privileged containers cannot use vGPUs");
}

TEST(ExtenderClient, BadAnswersAreErrorsNotCrashes) {
  FakeExtenderServer server;
  server.filter_answer_ = "{not json";
  server.webhook_answer_ = R"({"response":{"allowed":true,"patch":"%%%"}})";
  auto client = ExtenderClient::Connect(server.url());
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->Filter(Pod(), {"n1"}).status().code(), StatusCode::kInternal);
  EXPECT_EQ((*client)->Admit(Pod()).status().code(), StatusCode::kInvalidArgument);
  auto nowhere = ExtenderClient::Connect("http://127.0.0.1:1");
  ASSERT_TRUE(nowhere.ok());
  EXPECT_EQ((*nowhere)->Filter(Pod(), {"n1"}).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace vgpu::sim
