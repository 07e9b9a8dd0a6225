#pragma once

// Leader election over a coordination.k8s.io/v1 Lease, decided the way client-go's
// leaderelection package decides it for kube-scheduler (and so for HAMi's chart): pure logic, no
// I/O. The adapter (scheduler/leader_elector.*) reads the Lease, asks Decide() what to do, writes
// the answer with the read resourceVersion as precondition (a 409 means another replica won the
// round) and reports the outcome.
//
//  - A Lease held by someone else counts as held while it keeps changing; it expires
//    leaseDurationSeconds after this process first saw its current form, measured on the local
//    monotonic clock. The holder's renewTime (another node's wall clock) is never compared with
//    ours, so clock skew between nodes cannot make a live lease look expired.
//  - The leader stays leader only until `renew_deadline` after the start of its last successful
//    write; past it IsLeader() is false even if the adapter's thread is stuck, and it must stop
//    binding at once. Others may take the lease `lease_duration` after they saw that write, so
//    lease_duration - renew_deadline is the margin for writes already in flight.
//  - Optionally the election follows the pod's kube-scheduler: the extender is only useful to the
//    kube-scheduler of its own pod (which calls it on 127.0.0.1), so while the kube-scheduler's
//    own Lease is held by another pod this replica does not take the lease, and gives it back
//    (empty holder) if it holds it, so the replica beside the active kube-scheduler takes over
//    within one retry period.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/base/status.h"

namespace vgpu::sched {

using MonoTime = std::chrono::steady_clock::time_point;
using WallTime = std::chrono::system_clock::time_point;

struct LeaseTiming {
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// client-go's rules: lease duration > renew deadline > 1.2 x retry period > 0, and the lease
// duration a whole number of seconds >= 1 (leaseDurationSeconds is an integer).
Status ValidateLeaseTiming(const LeaseTiming& t);

// Go's time.ParseDuration as kube-scheduler's --leader-elect-* flags take it: "15s", "1m30s",
// "500ms", "1.5h"; a bare "0" is zero. Negative values are refused.
Result<std::chrono::milliseconds> ParseFlagDuration(const std::string& text);

// The spec of a Lease plus its resourceVersion (the precondition of the next write).
struct LeaseRecord {
  std::string holder;  // spec.holderIdentity; empty = free
  int64_t lease_duration_s = 0;
  std::string acquire_time;  // MicroTime text, as written by the holder
  std::string renew_time;
  int64_t transitions = 0;
  std::string resource_version;
  bool operator==(const LeaseRecord&) const = default;
};

// Reads a Lease object; absent spec fields are empty/0, wrong types are InvalidArgument.
Result<LeaseRecord> ReadLease(const nlohmann::json& lease);
// The Lease object to create or PUT: name, namespace, resourceVersion (when set) and the spec.
nlohmann::json LeaseObject(const std::string& ns, const std::string& name, const LeaseRecord& r);
// metav1.MicroTime: "2026-01-02T03:04:05.123456Z".
std::string MicroTime(WallTime t);

// kube-scheduler's identity is "<hostname>_<uuid>" and a pod's hostname is its name: true when
// `holder` is `pod` or starts with "<pod>_".
bool HolderIsPod(const std::string& holder, const std::string& pod);

// Remembers a Lease as seen over time (client-go's observedRecord/observedTime).
class LeaseObserver {
 public:
  // The Lease as just read (nullopt: it does not exist). A changed record restarts its clock.
  void Observe(const std::optional<LeaseRecord>& lease, MonoTime now);
  const std::optional<LeaseRecord>& lease() const { return lease_; }
  // Someone holds it and it has not expired: now < first seen in this form + its duration.
  bool Held(MonoTime now) const;

 private:
  std::optional<LeaseRecord> lease_;
  MonoTime observed_at_{};
};

// Who leads among the kube-schedulers, from their own Lease.
enum class CoLeader {
  kUnknown,   // no such Lease, free or expired: no opinion
  kThisPod,   // this pod's kube-scheduler holds it
  kOtherPod,  // another pod's kube-scheduler holds it
};
CoLeader ColocatedLeader(const LeaseObserver& kube_scheduler_lease, const std::string& pod,
                         MonoTime now);

enum class LeaseAction {
  kStandBy,  // write nothing
  kCreate,   // no Lease yet: create it as holder
  kAcquire,  // free or expired: take it over (PUT with the read resourceVersion)
  kRenew,    // ours: renew it
  kRelease,  // ours but another pod's kube-scheduler leads: hand it back (empty holder)
};
const char* LeaseActionName(LeaseAction a);

struct LeaseDecision {
  LeaseAction action = LeaseAction::kStandBy;
  LeaseRecord write;   // what to write (its resource_version is the precondition)
  std::string reason;  // why standing by, for the log: "held by X", "..."
};

class LeaderElection {
 public:
  LeaderElection(std::string identity, LeaseTiming timing)
      : identity_(std::move(identity)), timing_(timing) {}

  // One round: the Lease as just read (nullopt: none), what the kube-schedulers' Lease says,
  // and the clocks (monotonic for every expiry, wall only for the times written).
  LeaseDecision Decide(const std::optional<LeaseRecord>& current, CoLeader co, MonoTime now,
                       WallTime wall);
  // The write of `d` succeeded; `stored` is the server's answer, `started` when the round began
  // (the conservative start of our term: others count from when they see the write).
  void Succeeded(const LeaseDecision& d, const LeaseRecord& stored, MonoTime started);
  // On shutdown: the write that gives the lease back, when we hold it (nullopt otherwise).
  std::optional<LeaseRecord> ReleaseRecord(WallTime wall) const;

  // Leader, and the last successful write started less than renew_deadline ago.
  bool IsLeader(MonoTime now) const {
    return leading_ && now < last_renew_ + timing_.renew_deadline;
  }
  const std::string& identity() const { return identity_; }
  const LeaseTiming& timing() const { return timing_; }
  const LeaseObserver& observer() const { return observer_; }

 private:
  std::string identity_;
  LeaseTiming timing_;
  LeaseObserver observer_;
  bool leading_ = false;
  MonoTime last_renew_{};
};

}  // namespace vgpu::sched
