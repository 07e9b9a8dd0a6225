#include "scheduler/leader_elector.h"

#include <cstdio>
#include <random>

#include "core/base/log.h"

namespace vgpu::scheduler {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
using SystemClock = std::chrono::system_clock;

std::string NewLeaderIdentity(const std::string& pod) {
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  (void)std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
  return pod + "_" + buf;
}

LeaderElector::LeaderElector(kube::Client& client, LeaderElectionOptions options,
                             std::function<void(uint64_t)> on_elected)
    : client_(client),
      options_(std::move(options)),
      on_elected_(std::move(on_elected)),
      election_(options_.identity, options_.timing) {}

Result<std::unique_ptr<LeaderElector>> LeaderElector::Start(
    kube::Client& client, LeaderElectionOptions options, std::function<void(uint64_t)> on_elected) {
  VGPU_RETURN_IF_ERROR(sched::ValidateLeaseTiming(options.timing));
  if (options.identity.empty()) return InvalidArgument("leader election needs an identity");
  if (options.lease_name.empty() || options.lease_namespace.empty()) {
    return InvalidArgument(
        "leader election needs --leader-elect-resource-name and "
        "--leader-elect-resource-namespace (or POD_NAMESPACE)");
  }
  if (options.kube_scheduler_lease == options.lease_name) {
    return InvalidArgument("--leader-elect-resource-name \"" + options.lease_name +
                           "\" is kube-scheduler's own Lease: vgpu-scheduler would take it from "
                           "kube-scheduler; give it its own name (default vgpu-scheduler)");
  }
  std::unique_ptr<LeaderElector> e(
      new LeaderElector(client, std::move(options), std::move(on_elected)));
  e->thread_ = std::thread([p = e.get()] { p->Loop(); });
  return e;
}

bool LeaderElector::IsLeader() const {
  std::lock_guard lock(mu_);
  return election_.IsLeader(SteadyClock::now());
}

uint64_t LeaderElector::term() const {
  std::lock_guard lock(mu_);
  return term_;
}

std::string LeaderElector::Describe() const {
  std::lock_guard lock(mu_);
  if (election_.IsLeader(SteadyClock::now())) return "leader";
  return "standby (" +
         (standby_reason_.empty() ? std::string("not elected yet") : standby_reason_) + ")";
}

void LeaderElector::Log(char severity, std::string_view message,
                        std::initializer_list<log::Field> fields) const {
  if (options_.log) {
    options_.log(log::Format(message, fields));
  } else {
    if (severity == 'W') {
      log::Warn(message, fields);
    } else {
      log::Info(message, fields);
    }
  }
}

void LeaderElector::Problem(const std::string& message) {
  if (message == last_problem_) return;
  last_problem_ = message;
  Log('W', "leader election: lease problem",
      {{"lease", lease_path()}, {"identity", options_.identity}, {"error", message}});
}

void LeaderElector::Loop() {
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    lock.unlock();
    Round();
    lock.lock();
    stop_cv_.wait_for(lock, options_.timing.retry_period, [this] { return stopping_; });
  }
}

void LeaderElector::Round() {
  const auto started = SteadyClock::now();
  const auto wall = SystemClock::now();
  const std::string& ns = options_.lease_namespace;

  sched::CoLeader co = sched::CoLeader::kUnknown;
  if (!options_.kube_scheduler_lease.empty()) {
    Result<json> ks = client_.GetLease(ns, options_.kube_scheduler_lease);
    if (ks.ok()) {
      Result<sched::LeaseRecord> rec = sched::ReadLease(*ks);
      if (rec.ok()) kube_scheduler_.Observe(*rec, started);
    } else if (ks.status().code() == StatusCode::kNotFound) {
      kube_scheduler_.Observe(std::nullopt, started);
    }  // other errors: keep what was seen; it expires on its own
    co = sched::ColocatedLeader(kube_scheduler_, options_.pod, started);
  }

  // No decision without the Lease: a leader's term runs out at its renew deadline on its own.
  std::optional<sched::LeaseRecord> current;
  std::string unreadable;
  Result<json> got = client_.GetLease(ns, options_.lease_name);
  if (got.ok()) {
    Result<sched::LeaseRecord> rec = sched::ReadLease(*got);
    if (rec.ok()) {
      current = *rec;
    } else {
      unreadable = "unreadable: " + rec.status().message();
    }
  } else if (got.status().code() != StatusCode::kNotFound) {
    unreadable = "cannot read it (" + got.status().ToString() +
                 "); check the API server and RBAC (leases: get, create, update)";
  }

  sched::LeaseDecision d;
  if (!unreadable.empty()) {
    Problem(unreadable);
    d.reason = "the lease cannot be read";
    std::lock_guard lock(mu_);
    standby_reason_ = d.reason;
  } else {
    std::lock_guard lock(mu_);
    d = election_.Decide(current, co, started, wall);
    if (d.action == sched::LeaseAction::kStandBy) standby_reason_ = d.reason;
  }
  if (d.action != sched::LeaseAction::kStandBy) {
    const json obj = sched::LeaseObject(ns, options_.lease_name, d.write);
    Result<json> written = d.action == sched::LeaseAction::kCreate ? client_.CreateLease(ns, obj)
                                                                   : client_.UpdateLease(ns, obj);
    if (written.ok()) {
      Result<sched::LeaseRecord> stored = sched::ReadLease(*written);
      if (stored.ok()) {
        std::lock_guard lock(mu_);
        const bool was = election_.IsLeader(started);
        election_.Succeeded(d, *stored, started);
        if (!was && election_.IsLeader(started)) ++term_;
        if (d.action == sched::LeaseAction::kRelease) {
          standby_reason_ = "released: the kube-scheduler of another pod leads";
        }
      }
      last_problem_.clear();
    } else if (written.status().code() != StatusCode::kFailedPrecondition &&
               written.status().code() != StatusCode::kAlreadyExists) {
      // 409s are another replica winning the round; anything else is worth a line.
      Problem(std::string("cannot ") + sched::LeaseActionName(d.action) + " it (" +
              written.status().ToString() + ")");
    }
  }

  // One line per change of role.
  bool leader = false;
  uint64_t term = 0;
  std::string reason;
  {
    std::lock_guard lock(mu_);
    leader = election_.IsLeader(SteadyClock::now());
    term = term_;
    reason = standby_reason_;
  }
  const std::string& id = options_.identity;
  if (leader && term != notified_term_) {
    // A new term, also one won back before a "lost" line was due: re-read before binding.
    logged_leader_ = true;
    logged_standby_.clear();
    notified_term_ = term;
    Log('I', "leader election: became leader; re-reading nodes and pods before the first bind",
        {{"lease", lease_path()}, {"identity", id}, {"term", term}});
    if (on_elected_) on_elected_(term);
  } else if (!leader && logged_leader_) {
    logged_leader_ = false;
    logged_standby_ = reason;
    // Someone else's name on the lease, or a release; otherwise no renewal in time.
    const bool told = (d.action == sched::LeaseAction::kStandBy && unreadable.empty()) ||
                      d.action == sched::LeaseAction::kRelease;
    Log('W', "leader election: lost the lease; binds are refused from now on",
        {{"lease", lease_path()},
         {"identity", id},
         {"reason",
          told ? reason : std::string("no successful renewal within the renew deadline")}});
  } else if (!leader && reason != logged_standby_ && !reason.empty()) {
    logged_standby_ = reason;
    Log('I', "leader election: standing by",
        {{"lease", lease_path()}, {"identity", id}, {"reason", reason}});
  }
}

void LeaderElector::Stop() {
  {
    std::lock_guard lock(stop_mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::optional<sched::LeaseRecord> release;
  {
    std::lock_guard lock(mu_);
    if (options_.release_on_stop && election_.IsLeader(SteadyClock::now())) {
      release = election_.ReleaseRecord(SystemClock::now());
    }
  }
  if (release) {
    Result<json> r = client_.UpdateLease(
        options_.lease_namespace,
        sched::LeaseObject(options_.lease_namespace, options_.lease_name, *release));
    if (r.ok()) {
      Log('I', "leader election: released the lease on shutdown",
          {{"lease", lease_path()}, {"identity", options_.identity}});
    } else {
      Log('W', "leader election: could not release the lease on shutdown; it expires on its own",
          {{"lease", lease_path()},
           {"identity", options_.identity},
           {"error", r.status().ToString()}});
    }
    std::lock_guard lock(mu_);
    if (r.ok()) {
      Result<sched::LeaseRecord> stored = sched::ReadLease(*r);
      sched::LeaseDecision d;
      d.action = sched::LeaseAction::kRelease;
      if (stored.ok()) election_.Succeeded(d, *stored, SteadyClock::now());
    }
  }
}

}  // namespace vgpu::scheduler
