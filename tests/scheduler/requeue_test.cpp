#include "scheduler/requeue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "fake_cluster_api.h"
#include "scheduler/extender.h"
#include "test_objects.h"

namespace vgpu::scheduler {
namespace {

using nlohmann::json;
using testing::BindArgs;
using testing::FakeClusterApi;
using testing::FilterArgs;
using testing::GpuNode;
using testing::GpuPod;
using Clock = TurnedAwayPods::Clock;

std::vector<std::string> Names(const std::vector<TurnedAwayPods::Target>& targets) {
  std::vector<std::string> out;
  out.reserve(targets.size());
  for (const auto& t : targets) out.push_back(t.ns + "/" + t.name);
  return out;
}

TEST(TurnedAwayPods, NudgedOnceCapacityFreedAfterTheyWereTurnedAway) {
  TurnedAwayPods pods;
  const auto t0 = Clock::now();
  pods.TurnedAway("u1", "default", "a", 5, t0);
  pods.TurnedAway("u2", "default", "b", 7, t0);
  // Nothing freed since either was turned away.
  EXPECT_TRUE(pods.Due(5, t0).empty());
  // Freed after a, not after b.
  EXPECT_EQ(Names(pods.Due(6, t0)), std::vector<std::string>{"default/a"});
  EXPECT_EQ(pods.size(), 1u);
  // Each nudge once: a is forgotten until it is turned away again.
  EXPECT_EQ(Names(pods.Due(9, t0)), std::vector<std::string>{"default/b"});
  EXPECT_TRUE(pods.Due(10, t0).empty());
  // A pod that was bound is not nudged.
  pods.TurnedAway("u3", "default", "c", 10, t0);
  pods.Forget("u3");
  EXPECT_TRUE(pods.Due(11, t0).empty());
}

TEST(TurnedAwayPods, OldAndExcessPodsAreDroppedWithoutANudge) {
  TurnedAwayPods pods(/*max_pods=*/2, std::chrono::seconds(60));
  const auto t0 = Clock::now();
  pods.TurnedAway("u1", "default", "a", 1, t0);
  pods.TurnedAway("u2", "default", "b", 1, t0 + std::chrono::seconds(1));
  pods.TurnedAway("u3", "default", "c", 1, t0 + std::chrono::seconds(2));  // drops a
  EXPECT_EQ(pods.size(), 2u);
  // Turned away again: remembered since the first time (b expires first).
  pods.TurnedAway("u2", "default", "b", 2, t0 + std::chrono::seconds(30));
  EXPECT_EQ(Names(pods.Due(3, t0 + std::chrono::seconds(61) + std::chrono::milliseconds(500))),
            std::vector<std::string>{"default/c"});
  EXPECT_EQ(pods.size(), 0u);
}

// End to end through the extender: a pod turned away because the only GPU is taken is annotated
// within a poll once the pod holding the GPU is deleted, so kube-scheduler retries it at once.
TEST(Requeuer, ATurnedAwayPodIsNudgedWhenItsGpuFrees) {
  ClusterModel model;
  FakeClusterApi api(&model);
  SchedulerMetrics metrics;
  Extender extender(ExtenderOptions{}, model, api, metrics);
  Requeuer requeuer(
      api, [&model] { return model.capacity_generation(); },
      Requeuer::Options{std::chrono::milliseconds(10)});
  extender.SetRequeuer(&requeuer);
  api.PutNode(GpuNode("n1", 1, 10000));
  json a = GpuPod("a", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "6000"}});
  json b = GpuPod("b", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "6000"}});
  api.PutPod(a);
  api.PutPod(b);
  ASSERT_EQ(extender.Bind(BindArgs(a, "n1")).Json()["error"], "");
  ASSERT_EQ(extender.Filter(FilterArgs(b, {"n1"})).Json()["nodenames"].size(), 0u);
  const auto annotation = [&] {
    return api.Pod("default", "b")["metadata"]["annotations"].value(kCapacityFreedAnnotation, "");
  };
  // Nothing freed: no nudge.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(annotation(), "");
  api.DeletePod("default", "a");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  // The count moves after the patch lands: wait for both.
  while ((annotation().empty() || requeuer.nudged() == 0) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_NE(annotation(), "");
  EXPECT_EQ(requeuer.nudged(), 1u);
  // It fits now; once bound it is not nudged again when more capacity frees.
  ASSERT_EQ(extender.Filter(FilterArgs(api.Pod("default", "b"), {"n1"})).Json()["nodenames"].size(),
            1u);
  ASSERT_EQ(extender.Bind(BindArgs(b, "n1")).Json()["error"], "");
  api.PutNode(GpuNode("n1", 1, 10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(requeuer.nudged(), 1u);
}

TEST(GateRefusedPods, DueOnceSettledOnceEachAndBounded) {
  using std::chrono::milliseconds;
  GateRefusedPods pods(/*max_pods=*/2, std::chrono::seconds(60));
  const auto t0 = Clock::now();
  const milliseconds settle(500);
  struct Step {
    const char* what;
    std::function<void()> act;  // before the Due() at `at`
    milliseconds at;
    std::vector<std::string> want;
  };
  const Step steps[] = {
      {"refused a and b",
       [&] {
         pods.Refused("u1", "default", "a", t0);
         pods.Refused("u2", "default", "b", t0 + milliseconds(300));
       },
       milliseconds(400),
       {}},
      {"a settled", [] {}, milliseconds(500), {"default/a"}},
      {"b refused again: it settles from the latest refusal",
       [&] { pods.Refused("u2", "default", "b", t0 + milliseconds(600)); },
       milliseconds(900),
       {}},
      {"b settled", [] {}, milliseconds(1100), {"default/b"}},
      {"each once", [] {}, milliseconds(5000), {}},
      {"c bound meanwhile",
       [&] {
         pods.Refused("u3", "default", "c", t0 + milliseconds(5000));
         pods.Forget("u3");
       },
       milliseconds(6000),
       {}},
      {"no uid: not remembered",
       [&] { pods.Refused("", "default", "d", t0); },
       milliseconds(6000),
       {}},
      {"full: the one refused longest ago goes",
       [&] {
         pods.Refused("u4", "default", "e", t0 + milliseconds(6000));
         pods.Refused("u5", "default", "f", t0 + milliseconds(6100));
         pods.Refused("u6", "default", "g", t0 + milliseconds(6200));
       },
       milliseconds(7000),
       {"default/f", "default/g"}},
      {"refused longer ago than forget_after: dropped",
       [&] { pods.Refused("u7", "default", "h", t0 + milliseconds(7000)); },
       milliseconds(7000 + 61000),
       {}},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.what);
    step.act();
    EXPECT_EQ(Names(pods.Due(t0 + step.at, settle)), step.want);
  }
  EXPECT_EQ(pods.size(), 0u);
}

// Waits until `requeuer` has nudged `want` pods (or 20 s), then a few more polls: the count must
// have reached `want` and stayed there.
void ExpectNudged(const Requeuer& requeuer, uint64_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (requeuer.nudged() < want && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // 10 polls
  EXPECT_EQ(requeuer.nudged(), want);
}

// Leader failover: kube-scheduler binds through its local extender before the replica beside it
// may bind. The refused pod would wait in kube-scheduler's unschedulable queue for up to 60 s;
// it is annotated once the gate opens, and only once.
TEST(Requeuer, ABindRefusedByTheGateIsNudgedWhenTheGateOpens) {
  ClusterModel model;
  FakeClusterApi api(&model);
  SchedulerMetrics metrics;
  Extender extender(ExtenderOptions{}, model, api, metrics);
  std::atomic<bool> open{false};
  extender.SetBindGate([&open] {
    return open.load() ? Status::Ok() : FailedPrecondition("this replica is not the leader");
  });
  Requeuer requeuer(
      api, [&model] { return model.capacity_generation(); },
      Requeuer::Options{.poll = std::chrono::milliseconds(10),
                        .gate_open = [&open] { return open.load(); },
                        .gate_settle = std::chrono::milliseconds(0)});
  extender.SetRequeuer(&requeuer);
  api.PutNode(GpuNode("n1", 1, 10000));
  const json a = GpuPod("a", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "6000"}});
  api.PutPod(a);
  const auto annotation = [&] {
    return api.Pod("default", "a")["metadata"]["annotations"].value(kCapacityFreedAnnotation, "");
  };
  struct Step {
    const char* what;
    std::function<void()> act;
    uint64_t nudged;
    bool annotated;
  };
  const Step steps[] = {
      {"bind refused by the closed gate",
       [&] { EXPECT_NE(extender.Bind(BindArgs(a, "n1")).Json()["error"], ""); }, 0, false},
      {"the gate stays closed", [] {}, 0, false},
      {"the gate opens", [&] { open = true; }, 1, true},
      {"open for more polls", [] {}, 1, true},
      {"closed and open again without a new refusal",
       [&] {
         open = false;
         std::this_thread::sleep_for(std::chrono::milliseconds(50));
         open = true;
       },
       1, true},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.what);
    step.act();
    ExpectNudged(requeuer, step.nudged);
    EXPECT_EQ(!annotation().empty(), step.annotated);
  }
  // kube-scheduler's retry then binds it.
  EXPECT_EQ(extender.Bind(BindArgs(api.Pod("default", "a"), "n1")).Json()["error"], "");
}

// A bind that gave up waiting for the node's lock leaves the pod in kube-scheduler's
// unschedulable queue, which the lock's release (a node annotation) does not move: the pod is
// annotated once settled, once. A bind refused for another reason is not.
TEST(Requeuer, ABindThatGaveUpOnTheNodeLockIsNudgedOnce) {
  ClusterModel model;
  FakeClusterApi api(&model);
  SchedulerMetrics metrics;
  ExtenderOptions options;
  options.lock.wait_timeout = std::chrono::milliseconds(50);
  Extender extender(options, model, api, metrics);
  Requeuer requeuer(
      api, [&model] { return model.capacity_generation(); },
      Requeuer::Options{.poll = std::chrono::milliseconds(10),
                        .gate_settle = std::chrono::milliseconds(0)});
  extender.SetRequeuer(&requeuer);
  api.PutNode(GpuNode("n1", 2, 10000));
  const json a = GpuPod("a", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}});
  const json b = GpuPod("b", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}});
  const json c = GpuPod("c", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "90000"}});
  for (const json& p : {a, b, c}) api.PutPod(p);
  const auto annotated = [&](const char* pod) {
    return !api.Pod("default", pod)["metadata"]["annotations"]
                .value(kCapacityFreedAnnotation, "")
                .empty();
  };
  // a takes n1's lock; no device plugin here finishes its Allocate, so the lock stays.
  ASSERT_EQ(extender.Bind(BindArgs(a, "n1")).Json()["error"], "");
  const std::string refused = extender.Bind(BindArgs(b, "n1")).Json()["error"];
  EXPECT_NE(refused.find("is locked by pod default/a"), std::string::npos) << refused;
  // c does not fit: refused before the lock, kube-scheduler's own retry is the right one.
  EXPECT_NE(extender.Bind(BindArgs(c, "n1")).Json()["error"], "");
  ExpectNudged(requeuer, 1);
  EXPECT_TRUE(annotated("b"));
  EXPECT_FALSE(annotated("a"));
  EXPECT_FALSE(annotated("c"));
}

// Only this replica's own binds reach Requeuer::Forget; the pod is read again before the nudge.
TEST(Requeuer, ARefusedPodBoundOrDeletedMeanwhileIsNotNudged) {
  struct Case {
    const char* name;
    std::function<void(FakeClusterApi&, Extender&, std::atomic<bool>& extender_gate)> meanwhile;
  };
  const Case cases[] = {
      {"bound by the previous leader",
       [](FakeClusterApi& api, Extender&, std::atomic<bool>&) {
         ASSERT_TRUE(api.BindPod("default", "p", "uid-default-p", "n1").ok());
       }},
      {"deleted",
       [](FakeClusterApi& api, Extender&, std::atomic<bool>&) { api.DeletePod("default", "p"); }},
      {"deleted and made again under its name",
       [](FakeClusterApi& api, Extender&, std::atomic<bool>&) {
         api.DeletePod("default", "p");
         json again = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}});
         again["metadata"]["uid"] = "uid-default-p-2";
         api.PutPod(again);
       }},
      {"bound here by kube-scheduler's retry before the requeuer's poll",
       [](FakeClusterApi& api, Extender& extender, std::atomic<bool>& extender_gate) {
         extender_gate = true;
         ASSERT_EQ(extender.Bind(BindArgs(api.Pod("default", "p"), "n1")).Json()["error"], "");
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterModel model;
    FakeClusterApi api(&model);
    SchedulerMetrics metrics;
    Extender extender(ExtenderOptions{}, model, api, metrics);
    std::atomic<bool> extender_gate{false};
    std::atomic<bool> requeuer_gate{false};
    extender.SetBindGate([&extender_gate] {
      return extender_gate.load() ? Status::Ok()
                                  : FailedPrecondition("this replica is not the leader");
    });
    Requeuer requeuer(
        api, [&model] { return model.capacity_generation(); },
        Requeuer::Options{.poll = std::chrono::milliseconds(10),
                          .gate_open = [&requeuer_gate] { return requeuer_gate.load(); },
                          .gate_settle = std::chrono::milliseconds(0)});
    extender.SetRequeuer(&requeuer);
    api.PutNode(GpuNode("n1", 2, 10000));
    // `control` is refused too and stays pending: once it is nudged, the poll that would have
    // nudged `p` has run.
    const json p = GpuPod("p", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}});
    const json control =
        GpuPod("control", {{"nvidia.com/gpu", "1"}, {"nvidia.com/gpumem", "1000"}});
    api.PutPod(p);
    api.PutPod(control);
    ASSERT_NE(extender.Bind(BindArgs(p, "n1")).Json()["error"], "");
    ASSERT_NE(extender.Bind(BindArgs(control, "n1")).Json()["error"], "");
    c.meanwhile(api, extender, extender_gate);
    requeuer_gate = true;
    ExpectNudged(requeuer, 1);
    EXPECT_NE(api.Pod("default", "control")["metadata"]["annotations"].value(
                  kCapacityFreedAnnotation, ""),
              "");
    if (Result<json> now = api.GetPod("default", "p"); now.ok()) {
      EXPECT_EQ((*now)["metadata"]["annotations"].value(kCapacityFreedAnnotation, ""), "");
    }
  }
}

}  // namespace
}  // namespace vgpu::scheduler
