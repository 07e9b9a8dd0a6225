#pragma once

// Leader election of vgpu-scheduler replicas over a coordination.k8s.io/v1 Lease, driven through
// kube::Client: every retry period one round reads the Lease (and kube-scheduler's, when it
// follows one), asks sched::LeaderElection what to do, and writes with the read resourceVersion
// as precondition (409 Conflict: another replica won the round). Only the leader binds; see
// docs/scheduler.md "Leader election".

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/base/log.h"
#include "core/sched/leader_election.h"
#include "kube/client.h"

namespace vgpu::scheduler {

struct LeaderElectionOptions {
  bool enabled = false;
  std::string lease_namespace = "kube-system";
  std::string lease_name = "vgpu-scheduler";
  std::string identity;  // "<pod>_<random>", unique per process
  std::string pod;       // this pod's name (= hostname): whose kube-scheduler to follow
  // kube-scheduler's own Lease in lease_namespace; "" = do not follow it.
  std::string kube_scheduler_lease;
  sched::LeaseTiming timing;
  // Stop() hands the lease back when leading (client-go's ReleaseOnCancel); tests of crashes turn
  // it off.
  bool release_on_stop = true;
  // One line per change of role and per new kind of error (log::Format text); core/base/log.h's
  // stderr lines when unset.
  std::function<void(const std::string&)> log;
};

// "<pod or hostname>_<16 random hex digits>".
std::string NewLeaderIdentity(const std::string& pod);

class LeaderElector {
 public:
  // `on_elected(term)` runs on the elector's thread when this replica becomes leader (term counts
  // the terms won, from 1), before the next round; keep it short. `client` must outlive it.
  static Result<std::unique_ptr<LeaderElector>> Start(kube::Client& client,
                                                      LeaderElectionOptions options,
                                                      std::function<void(uint64_t)> on_elected);
  ~LeaderElector() { Stop(); }
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Leader now: the last successful write of the Lease began less than the renew deadline ago.
  bool IsLeader() const;
  // The term IsLeader() belongs to (0 before the first).
  uint64_t term() const;
  // "leader" or "standby (held by X)", for /readyz and errors.
  std::string Describe() const;
  // Stops the rounds; a leader hands the lease back (empty holder) so another replica takes over
  // within one retry period instead of a lease duration.
  void Stop();

  const LeaderElectionOptions& options() const { return options_; }
  std::string lease_path() const { return options_.lease_namespace + "/" + options_.lease_name; }

 private:
  LeaderElector(kube::Client& client, LeaderElectionOptions options,
                std::function<void(uint64_t)> on_elected);
  void Loop();
  void Round();
  void Log(char severity, std::string_view message, std::initializer_list<log::Field> fields) const;
  void Problem(const std::string& message);  // logs a message once until it changes

  kube::Client& client_;
  LeaderElectionOptions options_;
  std::function<void(uint64_t)> on_elected_;

  mutable std::mutex mu_;  // guards election_, term_, standby_reason_
  sched::LeaderElection election_;
  uint64_t term_ = 0;
  std::string standby_reason_;
  sched::LeaseObserver kube_scheduler_;  // elector thread only
  bool logged_leader_ = false;           // elector thread only
  uint64_t notified_term_ = 0;           // elector thread only
  std::string logged_standby_, last_problem_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vgpu::scheduler
