#include "core/sched/leader_election.h"

#include <gtest/gtest.h>

#include <map>

namespace vgpu::sched {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

const MonoTime kT0 = MonoTime{} + std::chrono::hours(100);
const WallTime kWall = WallTime{} + std::chrono::hours(500000);

LeaseRecord Held(const std::string& holder, int64_t duration_s = 15, int64_t transitions = 3,
                 const std::string& renew = "2026-11-27T10:00:00.000000Z") {
  return {holder, duration_s, "2026-11-27T09:00:00.000000Z", renew, transitions, "41"};
}

TEST(LeaderElection, DecidesFromTheLeaseAsObserved) {
  struct Case {
    const char* name;
    std::optional<LeaseRecord> lease;
    CoLeader co;
    seconds unchanged_for;  // the same record was seen again after this long
    LeaseAction want;
    std::string want_holder;
    int64_t want_transitions;
  };
  const std::string me = "pod-a_1";
  const Case cases[] = {
      {"no lease: create it", std::nullopt, CoLeader::kUnknown, seconds(0), LeaseAction::kCreate,
       me, 0},
      {"held by another, just seen", Held("pod-b_2"), CoLeader::kUnknown, seconds(0),
       LeaseAction::kStandBy, "", 0},
      {"held by another, unchanged 14 of 15 s", Held("pod-b_2"), CoLeader::kUnknown, seconds(14),
       LeaseAction::kStandBy, "", 0},
      {"held by another, unchanged 15 s: expired", Held("pod-b_2"), CoLeader::kUnknown, seconds(15),
       LeaseAction::kAcquire, me, 4},
      {"the holder's own duration counts (60 s)", Held("pod-b_2", 60), CoLeader::kUnknown,
       seconds(30), LeaseAction::kStandBy, "", 0},
      {"skew: renewTime an hour in the past, just seen",
       Held("pod-b_2", 15, 3, "2026-11-27T09:00:00Z"), CoLeader::kUnknown, seconds(0),
       LeaseAction::kStandBy, "", 0},
      {"skew: renewTime an hour in the future, unchanged 15 s",
       Held("pod-b_2", 15, 3, "2026-11-27T11:00:00Z"), CoLeader::kUnknown, seconds(15),
       LeaseAction::kAcquire, me, 4},
      {"released (empty holder): take it at once", Held(""), CoLeader::kUnknown, seconds(0),
       LeaseAction::kAcquire, me, 4},
      {"ours: renew, transitions kept", Held(me), CoLeader::kUnknown, seconds(0),
       LeaseAction::kRenew, me, 3},
      {"free but another pod's kube-scheduler leads", Held(""), CoLeader::kOtherPod, seconds(0),
       LeaseAction::kStandBy, "", 0},
      {"no lease and another pod's kube-scheduler leads", std::nullopt, CoLeader::kOtherPod,
       seconds(0), LeaseAction::kStandBy, "", 0},
      {"ours but another pod's kube-scheduler leads: give it back", Held(me), CoLeader::kOtherPod,
       seconds(0), LeaseAction::kRelease, "", 3},
      {"our kube-scheduler leads, but another replica holds a live lease", Held("pod-b_2"),
       CoLeader::kThisPod, seconds(3), LeaseAction::kStandBy, "", 0},
      {"our kube-scheduler leads and the lease expired", Held("pod-b_2"), CoLeader::kThisPod,
       seconds(15), LeaseAction::kAcquire, me, 4},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    LeaderElection e(me, LeaseTiming{});
    LeaseDecision d = e.Decide(c.lease, c.co, kT0, kWall);
    if (c.unchanged_for > seconds(0)) d = e.Decide(c.lease, c.co, kT0 + c.unchanged_for, kWall);
    EXPECT_EQ(LeaseActionName(d.action), std::string(LeaseActionName(c.want)));
    if (c.want == LeaseAction::kStandBy) {
      EXPECT_FALSE(d.reason.empty());
      continue;
    }
    EXPECT_EQ(d.write.holder, c.want_holder);
    EXPECT_EQ(d.write.transitions, c.want_transitions);
    EXPECT_EQ(d.write.renew_time, MicroTime(kWall));
    // The read resourceVersion is the precondition of the write.
    EXPECT_EQ(d.write.resource_version, c.lease ? c.lease->resource_version : "");
    if (c.want == LeaseAction::kRelease) {
      EXPECT_EQ(d.write.lease_duration_s, 1);
    } else {
      EXPECT_EQ(d.write.lease_duration_s, 15);
    }
    if (c.want == LeaseAction::kRenew) {
      EXPECT_EQ(d.write.acquire_time, c.lease->acquire_time);
    }
    if (c.want == LeaseAction::kAcquire) {
      EXPECT_EQ(d.write.acquire_time, MicroTime(kWall));
    }
  }
}

TEST(LeaderElection, LeaderUntilRenewDeadlineAfterLastSuccessfulWrite) {
  const LeaseTiming timing{seconds(15), seconds(10), seconds(2)};
  LeaderElection e("pod-a_1", timing);
  EXPECT_FALSE(e.IsLeader(kT0));
  LeaseDecision d = e.Decide(std::nullopt, CoLeader::kUnknown, kT0, kWall);
  ASSERT_EQ(d.action, LeaseAction::kCreate);
  EXPECT_FALSE(e.IsLeader(kT0));  // nothing written yet
  LeaseRecord stored = d.write;
  stored.resource_version = "7";
  e.Succeeded(d, stored, kT0);
  EXPECT_TRUE(e.IsLeader(kT0));
  EXPECT_TRUE(e.IsLeader(kT0 + milliseconds(9999)));
  // No renewal succeeded for the renew deadline (API server unreachable, thread stuck): step down.
  EXPECT_FALSE(e.IsLeader(kT0 + seconds(10)));

  // A renewal that succeeds pushes the deadline from the start of its round.
  d = e.Decide(stored, CoLeader::kUnknown, kT0 + seconds(2), kWall + seconds(2));
  ASSERT_EQ(d.action, LeaseAction::kRenew);
  stored = d.write;
  stored.resource_version = "8";
  e.Succeeded(d, stored, kT0 + seconds(2));
  EXPECT_TRUE(e.IsLeader(kT0 + milliseconds(11999)));
  EXPECT_FALSE(e.IsLeader(kT0 + seconds(12)));

  // A failed renewal (409: another replica wrote) changes nothing; the next read shows the new
  // holder and ends the term at once, before the deadline.
  d = e.Decide(stored, CoLeader::kUnknown, kT0 + seconds(4), kWall + seconds(4));
  ASSERT_EQ(d.action, LeaseAction::kRenew);
  EXPECT_TRUE(e.IsLeader(kT0 + seconds(5)));
  LeaseRecord taken = Held("pod-b_2");
  taken.resource_version = "9";
  d = e.Decide(taken, CoLeader::kUnknown, kT0 + seconds(5), kWall + seconds(5));
  EXPECT_EQ(d.action, LeaseAction::kStandBy);
  EXPECT_FALSE(e.IsLeader(kT0 + seconds(5)));
  EXPECT_FALSE(e.ReleaseRecord(kWall).has_value());
}

TEST(LeaderElection, ReleaseGivesTheLeaseBack) {
  LeaderElection e("pod-a_1", LeaseTiming{});
  LeaseDecision d = e.Decide(std::nullopt, CoLeader::kUnknown, kT0, kWall);
  LeaseRecord stored = d.write;
  stored.resource_version = "3";
  e.Succeeded(d, stored, kT0);
  std::optional<LeaseRecord> r = e.ReleaseRecord(kWall + seconds(1));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->holder, "");
  EXPECT_EQ(r->lease_duration_s, 1);
  EXPECT_EQ(r->resource_version, "3");

  // Another pod's kube-scheduler leads: the decision is a release, and after it we are no leader.
  d = e.Decide(stored, CoLeader::kOtherPod, kT0 + seconds(2), kWall + seconds(2));
  ASSERT_EQ(d.action, LeaseAction::kRelease);
  stored = d.write;
  stored.resource_version = "4";
  e.Succeeded(d, stored, kT0 + seconds(2));
  EXPECT_FALSE(e.IsLeader(kT0 + seconds(2)));
}

// Two replicas against one in-memory Lease with optimistic concurrency, rounds every retry period
// on a virtual clock: exactly one leader at a time, and when the leader stops renewing the other
// takes over within lease duration + retry period of the leader's last write.
TEST(LeaderElection, TwoReplicasOneLeaderAndTakeover) {
  const LeaseTiming timing{seconds(15), seconds(10), seconds(2)};
  std::optional<LeaseRecord> store;
  int rv = 0;
  const auto write = [&](const LeaseDecision& d) -> std::optional<LeaseRecord> {
    const std::string current = store ? store->resource_version : "";
    if (d.action == LeaseAction::kCreate ? store.has_value()
                                         : d.write.resource_version != current) {
      return std::nullopt;  // 409
    }
    store = d.write;
    store->resource_version = std::to_string(++rv);
    return store;
  };
  LeaderElection a("pod-a_1", timing), b("pod-b_1", timing);
  bool a_alive = true;
  MonoTime a_last_write{};
  std::optional<MonoTime> b_took_over;
  for (int step = 0; step < 40; ++step) {
    // b runs half a period after a; both read the store as it is at their turn.
    for (int who = 0; who < 2; ++who) {
      const MonoTime now = kT0 + seconds(2 * step) + milliseconds(1000 * who);
      const WallTime wall = kWall + seconds(2 * step) + milliseconds(1000 * who);
      LeaderElection& e = who == 0 ? a : b;
      if (who == 0 && !a_alive) continue;
      const LeaseDecision d = e.Decide(store, CoLeader::kUnknown, now, wall);
      if (d.action != LeaseAction::kStandBy) {
        if (auto stored = write(d)) {
          e.Succeeded(d, *stored, now);
          if (who == 0) a_last_write = now;
          if (who == 1 && !b_took_over) b_took_over = now;
        }
      }
      EXPECT_FALSE(a.IsLeader(now) && b.IsLeader(now)) << "step " << step;
    }
    if (step == 10) {
      ASSERT_TRUE(a.IsLeader(kT0 + seconds(20)));
      EXPECT_FALSE(b.IsLeader(kT0 + seconds(20)));
      a_alive = false;  // a stops renewing (killed, partitioned)
    }
  }
  ASSERT_TRUE(b_took_over.has_value());
  EXPECT_LE(*b_took_over - a_last_write, timing.lease_duration + timing.retry_period);
  EXPECT_GE(*b_took_over - a_last_write, timing.lease_duration);
  EXPECT_EQ(store->holder, "pod-b_1");
  EXPECT_EQ(store->transitions, 1);
}

TEST(LeaderElection, ColocatedLeaderFromKubeSchedulerLease) {
  struct Case {
    const char* name;
    std::optional<LeaseRecord> lease;
    seconds unchanged_for;
    CoLeader want;
  };
  const Case cases[] = {
      {"no lease", std::nullopt, seconds(0), CoLeader::kUnknown},
      {"this pod's kube-scheduler", Held("sched-1_6f1c"), seconds(0), CoLeader::kThisPod},
      {"exact hostname", Held("sched-1"), seconds(0), CoLeader::kThisPod},
      {"a pod whose name extends ours", Held("sched-10_6f1c"), seconds(0), CoLeader::kOtherPod},
      {"another pod", Held("sched-2_77aa"), seconds(0), CoLeader::kOtherPod},
      {"another pod, expired", Held("sched-2_77aa"), seconds(15), CoLeader::kUnknown},
      {"free", Held(""), seconds(0), CoLeader::kUnknown},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    LeaseObserver o;
    o.Observe(c.lease, kT0);
    o.Observe(c.lease, kT0 + c.unchanged_for);
    EXPECT_EQ(static_cast<int>(ColocatedLeader(o, "sched-1", kT0 + c.unchanged_for)),
              static_cast<int>(c.want));
  }
}

TEST(LeaderElection, ValidatesTiming) {
  struct Case {
    LeaseTiming t;
    const char* error;  // nullptr: valid
  };
  const Case cases[] = {
      {{seconds(15), seconds(10), seconds(2)}, nullptr},
      {{seconds(2), milliseconds(1500), milliseconds(200)}, nullptr},
      {{seconds(10), seconds(10), seconds(2)},
       "must be greater than --leader-elect-renew-deadline"},
      {{seconds(15), milliseconds(2400), seconds(2)}, "1.2 x --leader-elect-retry-period"},
      {{seconds(15), seconds(10), seconds(0)}, "retry-period must be positive"},
      {{milliseconds(1500), seconds(1), milliseconds(100)}, "whole number of seconds"},
  };
  for (const Case& c : cases) {
    const Status s = ValidateLeaseTiming(c.t);
    if (c.error == nullptr) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else {
      EXPECT_NE(s.message().find(c.error), std::string::npos) << s.ToString();
    }
  }
}

TEST(LeaderElection, ParsesGoDurations) {
  const std::map<std::string, int64_t> good = {{"15s", 15000}, {"1m30s", 90000},
                                               {"500ms", 500}, {"1.5h", 5400000},
                                               {"0", 0},       {"2s500ms", 2500}};
  for (const auto& [text, ms] : good) {
    Result<milliseconds> d = ParseFlagDuration(text);
    ASSERT_TRUE(d.ok()) << text << ": " << d.status().ToString();
    EXPECT_EQ(d->count(), ms) << text;
  }
  for (const char* bad : {"", "15", "s", "-5s", "15 s", "1.2.3s", "10d"}) {
    Result<milliseconds> d = ParseFlagDuration(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_NE(d.status().message().find("Go duration"), std::string::npos);
  }
}

TEST(LeaderElection, LeaseObjectRoundTripAndGarbage) {
  const LeaseRecord r = Held("pod-a_1", 15, 2);
  const json obj = LeaseObject("kube-system", "vgpu-scheduler", r);
  EXPECT_EQ(obj["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(obj["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(obj["metadata"]["resourceVersion"], "41");
  EXPECT_EQ(obj["spec"]["leaseDurationSeconds"], 15);
  Result<LeaseRecord> back = ReadLease(obj);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, r);

  Result<LeaseRecord> empty = ReadLease(json::parse(R"({"metadata":{"resourceVersion":"5"}})"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->holder, "");
  EXPECT_EQ(empty->resource_version, "5");
  EXPECT_FALSE(LeaseObject("ns", "n", LeaseRecord{}).contains("resourceVersion"));

  Result<LeaseRecord> bad = ReadLease(json::parse(R"({"spec":{"leaseDurationSeconds":"15"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("leaseDurationSeconds"), std::string::npos);
  EXPECT_FALSE(ReadLease(json::array()).ok());

  EXPECT_EQ(MicroTime(WallTime{} + seconds(1764237605) + std::chrono::microseconds(42)),
            "2025-11-27T10:00:05.000042Z");
}

}  // namespace
}  // namespace vgpu::sched
