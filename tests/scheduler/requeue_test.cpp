#include "scheduler/requeue.h"

#include <gtest/gtest.h>

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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (annotation().empty() && std::chrono::steady_clock::now() < deadline)
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

}  // namespace
}  // namespace vgpu::scheduler
