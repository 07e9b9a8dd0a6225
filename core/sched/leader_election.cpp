#include "core/sched/leader_election.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/base/go_duration.h"

namespace vgpu::sched {

using nlohmann::json;
using std::chrono::milliseconds;

Status ValidateLeaseTiming(const LeaseTiming& t) {
  const auto ms = [](milliseconds d) { return std::to_string(d.count()) + "ms"; };
  if (t.retry_period <= milliseconds(0)) {
    return InvalidArgument("--leader-elect-retry-period must be positive (got " +
                           ms(t.retry_period) + ")");
  }
  if (t.lease_duration < std::chrono::seconds(1) || t.lease_duration.count() % 1000 != 0) {
    return InvalidArgument(
        "--leader-elect-lease-duration must be a whole number of seconds >= 1s "
        "(Lease.spec.leaseDurationSeconds is an integer; got " +
        ms(t.lease_duration) + ")");
  }
  if (t.lease_duration <= t.renew_deadline) {
    return InvalidArgument("--leader-elect-lease-duration (" + ms(t.lease_duration) +
                           ") must be greater than --leader-elect-renew-deadline (" +
                           ms(t.renew_deadline) + ")");
  }
  if (t.renew_deadline.count() * 10 <= t.retry_period.count() * 12) {
    return InvalidArgument("--leader-elect-renew-deadline (" + ms(t.renew_deadline) +
                           ") must be greater than 1.2 x --leader-elect-retry-period (" +
                           ms(t.retry_period) + ")");
  }
  return Status::Ok();
}

Result<milliseconds> ParseFlagDuration(const std::string& text) {
  Result<std::chrono::nanoseconds> d = ParseGoDuration(text);
  if (!d.ok() || d->count() < 0) {
    return InvalidArgument("duration \"" + text +
                           "\" is not a Go duration such as 15s, 1m30s, 500ms or 1.5h");
  }
  return std::chrono::duration_cast<milliseconds>(*d);
}

Result<LeaseRecord> ReadLease(const json& lease) {
  if (!lease.is_object()) return InvalidArgument("Lease is not a JSON object");
  LeaseRecord r;
  if (auto m = lease.find("metadata"); m != lease.end() && m->is_object()) {
    if (auto rv = m->find("resourceVersion"); rv != m->end() && rv->is_string()) {
      r.resource_version = rv->get<std::string>();
    }
  }
  auto spec = lease.find("spec");
  if (spec == lease.end() || spec->is_null()) return r;
  if (!spec->is_object()) return InvalidArgument("Lease spec is not an object");
  const auto str = [&](const char* key, std::string& out) -> Status {
    auto it = spec->find(key);
    if (it == spec->end() || it->is_null()) return Status::Ok();
    if (!it->is_string())
      return InvalidArgument(std::string("Lease spec.") + key + " is not a string");
    out = it->get<std::string>();
    return Status::Ok();
  };
  const auto num = [&](const char* key, int64_t& out) -> Status {
    auto it = spec->find(key);
    if (it == spec->end() || it->is_null()) return Status::Ok();
    if (!it->is_number_integer()) {
      return InvalidArgument(std::string("Lease spec.") + key + " is not an integer");
    }
    out = it->get<int64_t>();
    return Status::Ok();
  };
  VGPU_RETURN_IF_ERROR(str("holderIdentity", r.holder));
  VGPU_RETURN_IF_ERROR(num("leaseDurationSeconds", r.lease_duration_s));
  VGPU_RETURN_IF_ERROR(str("acquireTime", r.acquire_time));
  VGPU_RETURN_IF_ERROR(str("renewTime", r.renew_time));
  VGPU_RETURN_IF_ERROR(num("leaseTransitions", r.transitions));
  return r;
}

json LeaseObject(const std::string& ns, const std::string& name, const LeaseRecord& r) {
  json meta = {{"name", name}, {"namespace", ns}};
  if (!r.resource_version.empty()) meta["resourceVersion"] = r.resource_version;
  json spec = {{"holderIdentity", r.holder},
               {"leaseDurationSeconds", r.lease_duration_s},
               {"leaseTransitions", r.transitions}};
  if (!r.acquire_time.empty()) spec["acquireTime"] = r.acquire_time;
  if (!r.renew_time.empty()) spec["renewTime"] = r.renew_time;
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", std::move(meta)},
          {"spec", std::move(spec)}};
}

std::string MicroTime(WallTime t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  const std::time_t secs =
      static_cast<std::time_t>(std::chrono::floor<std::chrono::seconds>(us).count());
  const auto frac = us.count() - static_cast<int64_t>(secs) * 1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  (void)std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                      tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                      static_cast<long long>(frac));
  return buf;
}

bool HolderIsPod(const std::string& holder, const std::string& pod) {
  if (pod.empty()) return false;
  return holder == pod ||
         (holder.size() > pod.size() && holder.starts_with(pod) && holder[pod.size()] == '_');
}

void LeaseObserver::Observe(const std::optional<LeaseRecord>& lease, MonoTime now) {
  if (lease != lease_) {
    lease_ = lease;
    observed_at_ = now;
  }
}

bool LeaseObserver::Held(MonoTime now) const {
  return lease_ && !lease_->holder.empty() &&
         now < observed_at_ + std::chrono::seconds(lease_->lease_duration_s);
}

CoLeader ColocatedLeader(const LeaseObserver& kube_scheduler_lease, const std::string& pod,
                         MonoTime now) {
  if (!kube_scheduler_lease.Held(now)) return CoLeader::kUnknown;
  return HolderIsPod(kube_scheduler_lease.lease()->holder, pod) ? CoLeader::kThisPod
                                                                : CoLeader::kOtherPod;
}

const char* LeaseActionName(LeaseAction a) {
  switch (a) {
    case LeaseAction::kStandBy:
      return "stand by";
    case LeaseAction::kCreate:
      return "create";
    case LeaseAction::kAcquire:
      return "acquire";
    case LeaseAction::kRenew:
      return "renew";
    case LeaseAction::kRelease:
      return "release";
  }
  return "unknown";
}

LeaseDecision LeaderElection::Decide(const std::optional<LeaseRecord>& current, CoLeader co,
                                     MonoTime now, WallTime wall) {
  observer_.Observe(current, now);
  LeaseDecision d;
  const std::string t = MicroTime(wall);
  const int64_t duration_s =
      std::chrono::duration_cast<std::chrono::seconds>(timing_.lease_duration).count();
  const bool mine = current && current->holder == identity_;
  // Anyone else's name on the lease ends our term at once, whatever our deadline says.
  if (!mine) leading_ = false;
  if (current && !mine && observer_.Held(now)) {
    d.reason = "held by " + current->holder;
    return d;
  }
  if (co == CoLeader::kOtherPod) {
    if (mine) {
      d.action = LeaseAction::kRelease;
      d.write = *current;
      d.write.holder.clear();
      d.write.lease_duration_s = 1;
      d.write.renew_time = t;
      return d;
    }
    d.reason = "the kube-scheduler of another pod leads";
    return d;
  }
  if (!current) {
    d.action = LeaseAction::kCreate;
    d.write = {identity_, duration_s, t, t, 0, ""};
    return d;
  }
  d.write = *current;
  d.write.lease_duration_s = duration_s;
  d.write.renew_time = t;
  if (mine) {
    d.action = LeaseAction::kRenew;
    if (d.write.acquire_time.empty()) d.write.acquire_time = t;
  } else {
    d.action = LeaseAction::kAcquire;
    d.write.holder = identity_;
    d.write.acquire_time = t;
    ++d.write.transitions;
  }
  return d;
}

void LeaderElection::Succeeded(const LeaseDecision& d, const LeaseRecord& stored,
                               MonoTime started) {
  observer_.Observe(stored, started);
  switch (d.action) {
    case LeaseAction::kCreate:
    case LeaseAction::kAcquire:
    case LeaseAction::kRenew:
      leading_ = stored.holder == identity_;
      last_renew_ = started;
      break;
    case LeaseAction::kRelease:
      leading_ = false;
      break;
    case LeaseAction::kStandBy:
      break;
  }
}

std::optional<LeaseRecord> LeaderElection::ReleaseRecord(WallTime wall) const {
  const auto& seen = observer_.lease();
  if (!leading_ || !seen || seen->holder != identity_) return std::nullopt;
  LeaseRecord r = *seen;
  r.holder.clear();
  r.lease_duration_s = 1;
  r.renew_time = MicroTime(wall);
  return r;
}

}  // namespace vgpu::sched
