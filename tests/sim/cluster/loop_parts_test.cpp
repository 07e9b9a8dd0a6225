#include <gtest/gtest.h>

#include "sim/cluster/event_clock.h"
#include "sim/cluster/pod_gone.h"
#include "sim/cluster/scheduling_queue.h"

namespace vgpu::sim {
namespace {

TEST(EventClock, BatchesByTimeInInsertionOrder) {
  EventClock clock;
  clock.Add(2.0, SimEventKind::kArrival, 5);
  clock.Add(1.0, SimEventKind::kArrival, 1);
  clock.Add(2.0, SimEventKind::kDeparture, 1);
  clock.Add(1.0, SimEventKind::kArrival, 2);
  std::vector<SimEvent> b = clock.PopNextBatch();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].pod, 1u);
  EXPECT_EQ(b[1].pod, 2u);
  EXPECT_EQ(clock.now(), 1.0);
  // An event added "in the past" happens now, never before.
  clock.Add(0.5, SimEventKind::kDeparture, 9);
  b = clock.PopNextBatch();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].pod, 9u);
  EXPECT_EQ(clock.now(), 1.0);
  b = clock.PopNextBatch();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].pod, 5u);
  EXPECT_EQ(b[1].kind, SimEventKind::kDeparture);
  EXPECT_EQ(clock.now(), 2.0);
  EXPECT_TRUE(clock.empty());
  EXPECT_TRUE(clock.PopNextBatch().empty());
}

TEST(SchedulingQueue, RetriesUnschedulableOnlyAfterAChange) {
  SchedulingQueue q;
  q.Add(3);
  q.Add(1);
  q.Add(3);  // already waiting: not twice
  EXPECT_EQ(q.active(), 2u);
  EXPECT_EQ(q.Pop(), 3u);
  q.MarkUnschedulable(3, "CardInsufficientMemory");
  EXPECT_EQ(q.Pop(), 1u);
  EXPECT_EQ(q.Pop(), std::nullopt);
  EXPECT_EQ(q.unschedulable_pods().at(3), "CardInsufficientMemory");
  q.MarkUnschedulable(1, "NodeInsufficientDevice");
  EXPECT_EQ(q.MoveAllToActive(), 2u);
  EXPECT_EQ(q.unschedulable(), 0u);
  EXPECT_EQ(q.Pop(), 1u);  // retries in arrival (index) order
  EXPECT_EQ(q.Pop(), 3u);
  q.Add(7);
  q.MarkUnschedulable(8, "x");
  q.Forget(7);
  q.Forget(8);
  EXPECT_EQ(q.active(), 0u);
  EXPECT_EQ(q.unschedulable(), 0u);
  q.Add(7);  // can come back after being forgotten
  EXPECT_EQ(q.Pop(), 7u);
}

// A preemptor whose victims are gone goes before the pods that waited with it, whether it was
// waiting as unschedulable or already queued.
TEST(SchedulingQueue, MoveToFrontPutsThePodFirstOnce) {
  SchedulingQueue q;
  q.Add(1);
  q.Add(2);
  q.MarkUnschedulable(5, "x");
  q.MoveToFront(5);
  EXPECT_EQ(q.unschedulable(), 0u);
  q.MoveToFront(2);
  EXPECT_EQ(q.active(), 3u);
  EXPECT_EQ(q.Pop(), 2u);
  EXPECT_EQ(q.Pop(), 5u);
  EXPECT_EQ(q.Pop(), 1u);
  EXPECT_EQ(q.Pop(), std::nullopt);
}

// A pod its kubelet could not start counts as a failed Allocate only while it is still there
// (a short job's departure may come while the kubelet workers lag on a loaded machine).
TEST(PodGoneSince, OnlyAPodStillThereIsAFailure) {
  const nlohmann::json handed = {{"metadata", {{"name", "p"}, {"namespace", "d"}, {"uid", "u1"}}}};
  struct Case {
    const char* what;
    Result<nlohmann::json> now;
    bool gone;
  };
  const Case cases[] = {
      {"deleted", Status(StatusCode::kNotFound, "pods \"p\" not found"), true},
      {"still there", handed, false},
      {"another pod of its name", nlohmann::json{{"metadata", {{"name", "p"}, {"uid", "u2"}}}},
       true},
      {"being deleted",
       nlohmann::json{{"metadata", {{"uid", "u1"}, {"deletionTimestamp", "2026-11-28T10:00:00Z"}}}},
       true},
      {"the API server failed", Status(StatusCode::kUnavailable, "down"), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(PodGoneSince(handed, c.now), c.gone);
  }
}

}  // namespace
}  // namespace vgpu::sim
