// The preempt verb against the request shapes kube-scheduler sends (1.20: Go field names, no
// json tags; later: lower-case tags), and what it answers.

#include <gtest/gtest.h>

#include "fake_cluster_api.h"
#include "scheduler/extender.h"
#include "test_objects.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;
using testing::FakeClusterApi;
using testing::GpuNode;
using testing::GpuPod;

class PreemptTest : public ::testing::Test {
 protected:
  PreemptTest() : api_(&model_), extender_(options_, model_, api_, metrics_) {}

  // A running pod on `node` holding `mem` MiB of each GPU in `gpus`.
  json Running(const std::string& name, const std::string& node, int32_t priority,
               const std::vector<int>& gpus, int64_t mem, json labels = json::object()) {
    std::string devices;
    for (int g : gpus) {
      devices += "GPU-" + node + "-" + std::to_string(g) + ",NVIDIA," + std::to_string(mem) + ",0:";
    }
    json pod = GpuPod(name,
                      {{"nvidia.com/gpu", std::to_string(gpus.size())},
                       {"nvidia.com/gpumem", std::to_string(mem)}},
                      "default",
                      {{"hami.io/vgpu-devices-allocated", devices + ";"},
                       {"hami.io/vgpu-node", node},
                       {"hami.io/bind-phase", "success"}});
    pod["metadata"]["labels"] = std::move(labels);
    pod["spec"]["nodeName"] = node;
    pod["spec"]["priority"] = priority;
    pod["status"] = {{"phase", "Running"}, {"startTime", "2026-12-01T00:00:00Z"}};
    api_.PutPod(pod);
    return pod;
  }
  static json Preemptor(int32_t priority, int64_t mem, int gpus = 1) {
    json pod = GpuPod("high", {{"nvidia.com/gpu", std::to_string(gpus)},
                               {"nvidia.com/gpumem", std::to_string(mem)}});
    pod["spec"]["priority"] = priority;
    return pod;
  }
  // ExtenderPreemptionArgs as kube-scheduler 1.20 encodes it for a nodeCacheCapable extender:
  // no json tags, so Go's field names; NodeNameToVictims nil; each candidate node with the
  // victims its own plugins need (none for GPUs, which it ignores).
  static json Args120(const json& pod, const std::map<std::string, std::vector<std::string>>& v) {
    json meta = json::object();
    for (const auto& [node, uids] : v) {
      json pods = json::array();
      for (const std::string& u : uids) pods.push_back({{"UID", u}});
      meta[node] = {{"Pods", pods}, {"NumPDBViolations", 0}};
    }
    return {{"Pod", pod}, {"NodeNameToVictims", nullptr}, {"NodeNameToMetaVictims", meta}};
  }
  static std::vector<std::string> Victims(const json& answer, const std::string& node) {
    std::vector<std::string> out;
    for (const json& p : answer["nodeNameToMetaVictims"][node]["pods"]) out.push_back(p["uid"]);
    return out;
  }

  ExtenderOptions options_;
  ClusterModel model_;
  FakeClusterApi api_;
  SchedulerMetrics metrics_;
  Extender extender_;
};

TEST_F(PreemptTest, FullCardEvictsTheLowPriorityPodsThatMakeRoom) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  Running("low-a", "n1", 0, {0}, 8000);
  Running("low-b", "n1", 10, {0}, 4000);
  Running("low-c", "n1", 0, {0}, 4000);
  const VerbResult r = extender_.Preempt(Args120(Preemptor(1000, 8000), {{"n1", {}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  // Exactly the wire form kube-scheduler decodes (ExtenderPreemptionResult, case-insensitive).
  EXPECT_EQ(r.Json(), json::parse(R"({"nodeNameToMetaVictims": {"n1": {
      "pods": [{"uid": "uid-default-low-a"}], "numPDBViolations": 0}}})"));
  EXPECT_EQ(metrics_.preempt.count(), 1u);
  EXPECT_EQ(metrics_.preempt_victims.load(), 1u);
}

TEST_F(PreemptTest, NoSufficientVictimsAnswersNoNode) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  api_.PutNode(GpuNode("n2", 1, 16000));
  Running("peer", "n1", 1000, {0}, 16000);    // equal priority: never a victim
  Running("higher", "n2", 5000, {0}, 12000);  // higher: never a victim
  Running("low", "n2", 0, {0}, 4000);         // evicting it alone frees too little
  const VerbResult r = extender_.Preempt(Args120(Preemptor(1000, 8000), {{"n1", {}}, {"n2", {}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  EXPECT_EQ(r.Json(), json::parse(R"({"nodeNameToMetaVictims": {}})"));
}

// kube-scheduler 1.20.2 re-schedules a bound pod after an update re-queues it and then runs its
// PostFilter for it: the pod, on its node already, must evict nobody (e2e scenario 16).
TEST_F(PreemptTest, PodAlreadyPlacedEvictsNobody) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  json mid = Running("mid", "n1", 500, {0}, 8000);
  Running("low-a", "n1", 0, {0}, 4000);
  Running("low-b", "n1", 0, {0}, 4000);
  // As our pod watch knows it, request without the binding (a stale queue copy) ...
  json stale = mid;
  stale["spec"].erase("nodeName");
  VerbResult r = extender_.Preempt(Args120(stale, {{"n1", {}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  EXPECT_EQ(r.Json(), json::parse(R"({"nodeNameToMetaVictims": {}})"));
  // ... and with it.
  r = extender_.Preempt(Args120(mid, {{"n1", {}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  EXPECT_EQ(r.Json(), json::parse(R"({"nodeNameToMetaVictims": {}})"));
  // The same request for a pending pod of that priority does evict: the guard is what held.
  json pending = Preemptor(500, 8000);
  r = extender_.Preempt(Args120(pending, {{"n1", {}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  EXPECT_EQ(Victims(r.Json(), "n1").size(), 2u) << r.Text();
  EXPECT_EQ(metrics_.preempt_victims.load(), 2u);
}

TEST_F(PreemptTest, KeepsKubeSchedulersOwnVictimsMostImportantFirst) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  Running("gpu-low", "n1", 5, {0}, 16000);
  json cpu = GpuPod("cpu-hog", json::object());
  cpu["spec"]["nodeName"] = "n1";
  cpu["spec"]["priority"] = 50;
  api_.PutPod(cpu);
  const VerbResult r =
      extender_.Preempt(Args120(Preemptor(1000, 8000), {{"n1", {"uid-default-cpu-hog"}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  // kube-scheduler 1.20 reads the first victim as the node's highest-priority one.
  EXPECT_EQ(Victims(r.Json(), "n1"),
            (std::vector<std::string>{"uid-default-cpu-hog", "uid-default-gpu-low"}));
}

TEST_F(PreemptTest, NodesBreakingMoreBudgetsAreLeftOut) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  api_.PutNode(GpuNode("n2", 1, 16000));
  Running("db", "n1", 0, {0}, 16000, {{"app", "db"}});
  Running("batch", "n2", 500, {0}, 16000, {{"app", "batch"}});
  api_.pdbs = json::parse(R"([{"metadata": {"namespace": "default", "name": "db"},
      "spec": {"selector": {"matchLabels": {"app": "db"}}},
      "status": {"disruptionsAllowed": 0}}])");
  const VerbResult r = extender_.Preempt(Args120(Preemptor(1000, 8000), {{"n1", {}}, {"n2", {}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  // n2's victim has the higher priority, but evicting n1's would break the budget.
  EXPECT_EQ(r.Json()["nodeNameToMetaVictims"].size(), 1u) << r.Text();
  EXPECT_EQ(Victims(r.Json(), "n2"), (std::vector<std::string>{"uid-default-batch"}));

  // Only the protected pod can make room: it goes, and the answer says it breaks a budget.
  const VerbResult only = extender_.Preempt(Args120(Preemptor(1000, 8000), {{"n1", {}}}));
  EXPECT_EQ(Victims(only.Json(), "n1"), (std::vector<std::string>{"uid-default-db"}));
  EXPECT_EQ(only.Json()["nodeNameToMetaVictims"]["n1"]["numPDBViolations"], 1);
}

TEST_F(PreemptTest, WholePodsFromAnExtenderWithoutNodeCache) {
  api_.PutNode(GpuNode("n1", 2, 16000));
  Running("a", "n1", 0, {0}, 16000);
  Running("b", "n1", 0, {1}, 16000);
  json args = {{"pod", Preemptor(1000, 16000, 2)},
               {"nodeNameToVictims", {{"n1", {{"pods", json::array()}, {"numPDBViolations", 0}}}}}};
  const VerbResult r = extender_.Preempt(args);
  ASSERT_EQ(r.http_status, 200) << r.Text();
  EXPECT_EQ(Victims(r.Json(), "n1"), (std::vector<std::string>{"uid-default-a", "uid-default-b"}));
}

TEST_F(PreemptTest, NodeThatFreesByItselfIsLeftOut) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  json leaving = Running("leaving", "n1", 0, {0}, 16000);
  leaving["metadata"]["deletionTimestamp"] = "2026-12-01T00:01:00Z";
  api_.PutPod(leaving);
  const VerbResult r = extender_.Preempt(Args120(Preemptor(1000, 8000), {{"n1", {}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  // An empty victim list would make kube-scheduler 1.20 index past its end with two such nodes.
  EXPECT_TRUE(r.Json()["nodeNameToMetaVictims"].empty()) << r.Text();
}

// While the victims of an earlier cycle terminate, kube-scheduler 1.20.2 asks again on each
// attempt: the pod's room is being freed on n1, so nothing on n2 may be evicted for it.
TEST_F(PreemptTest, RoomAlreadyBeingFreedEvictsNobodyElsewhere) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  api_.PutNode(GpuNode("n2", 1, 16000));
  json leaving = Running("leaving", "n1", 0, {0}, 16000);
  leaving["metadata"]["deletionTimestamp"] = "2026-12-01T00:01:00Z";
  api_.PutPod(leaving);
  Running("low", "n2", 0, {0}, 16000);
  const VerbResult r = extender_.Preempt(Args120(Preemptor(1000, 8000), {{"n1", {}}, {"n2", {}}}));
  ASSERT_EQ(r.http_status, 200) << r.Text();
  EXPECT_TRUE(r.Json()["nodeNameToMetaVictims"].empty()) << r.Text();
  EXPECT_EQ(metrics_.preempt_victims.load(), 0u);
}

TEST_F(PreemptTest, BudgetsUnreadableMeansNoEviction) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  Running("low", "n1", 0, {0}, 16000);
  api_.fail_pdb_lists = true;
  const VerbResult r = extender_.Preempt(Args120(Preemptor(1000, 8000), {{"n1", {}}}));
  EXPECT_EQ(r.http_status, 503);
  EXPECT_NE(r.Text().find("PodDisruptionBudgets"), std::string::npos) << r.Text();
}

TEST_F(PreemptTest, MalformedArgsAreRefused) {
  EXPECT_EQ(extender_.Preempt(json::array()).http_status, 400);
  EXPECT_EQ(extender_.Preempt({{"NodeNameToMetaVictims", json::object()}}).http_status, 400);
  EXPECT_EQ(extender_.Preempt({{"Pod", Preemptor(1, 1)}}).http_status, 400);
  const VerbResult no_uid = extender_.Preempt(
      {{"Pod", Preemptor(1, 1)}, {"NodeNameToMetaVictims", {{"n1", {{"Pods", {{{"UID", ""}}}}}}}}});
  EXPECT_EQ(no_uid.http_status, 400);
  EXPECT_NE(no_uid.Text().find("without a UID"), std::string::npos) << no_uid.Text();
}

// After the preempt verb, kube-scheduler nominates the node; until the nominee binds or goes, a
// pod of lower priority must not take the room its victims left.
TEST_F(PreemptTest, NominatedPodKeepsTheRoomAgainstLowerPriority) {
  api_.PutNode(GpuNode("n1", 1, 16000));
  Running("low-a", "n1", 0, {0}, 16000);
  json high = Preemptor(1000, 8000);
  api_.PutPod(high);
  const VerbResult r = extender_.Preempt(Args120(high, {{"n1", {}}}));
  ASSERT_EQ(Victims(r.Json(), "n1"), (std::vector<std::string>{"uid-default-low-a"}));
  high["status"]["nominatedNodeName"] = "n1";
  api_.PutPod(high);
  api_.DeletePod("default", "low-a");

  json other = GpuPod("other", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "10000"}});
  other["spec"]["priority"] = 0;
  api_.PutPod(other);
  const json args = {{"pod", other}, {"nodenames", {"n1"}}};
  EXPECT_TRUE(extender_.Filter(args).Json()["nodenames"].empty())
      << "a lower-priority pod took the nominee's room";
  EXPECT_EQ(extender_.Filter({{"pod", high}, {"nodenames", {"n1"}}}).Json()["nodenames"],
            json::array({"n1"}));
  json urgent = other;
  urgent["metadata"]["name"] = "urgent";
  urgent["metadata"]["uid"] = "uid-default-urgent";
  urgent["spec"]["priority"] = 2000;
  EXPECT_EQ(extender_.Filter({{"pod", urgent}, {"nodenames", {"n1"}}}).Json()["nodenames"],
            json::array({"n1"}));  // higher priority than the nominee: not held against it

  api_.DeletePod("default", "high");  // the nominee gave up: the room is free for anyone
  EXPECT_EQ(extender_.Filter(args).Json()["nodenames"], json::array({"n1"}));
}

}  // namespace
}  // namespace vgpu::scheduler
