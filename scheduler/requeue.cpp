#include "scheduler/requeue.h"

#include <nlohmann/json.hpp>

#include "core/base/log.h"

namespace vgpu::scheduler {

void TurnedAwayPods::TurnedAway(const std::string& uid, const std::string& ns,
                                const std::string& name, uint64_t generation,
                                Clock::time_point now) {
  if (uid.empty()) return;
  auto it = pods_.find(uid);
  if (it == pods_.end() && pods_.size() >= max_pods_) {
    // Full: drop the pod remembered longest (it still gets kube-scheduler's own periodic retry).
    auto oldest = pods_.begin();
    for (auto p = pods_.begin(); p != pods_.end(); ++p) {
      if (p->second.since < oldest->second.since) oldest = p;
    }
    pods_.erase(oldest);
  }
  Entry& e = pods_[uid];
  e.ns = ns;
  e.name = name;
  e.generation = generation;
  if (it == pods_.end()) e.since = now;
}

void TurnedAwayPods::Forget(const std::string& uid) {
  pods_.erase(uid);
}

std::vector<TurnedAwayPods::Target> TurnedAwayPods::Due(uint64_t generation,
                                                        Clock::time_point now) {
  std::vector<Target> due;
  for (auto it = pods_.begin(); it != pods_.end();) {
    if (now - it->second.since > forget_after_) {
      it = pods_.erase(it);
    } else if (it->second.generation < generation) {
      due.push_back(Target{it->first, it->second.ns, it->second.name});
      it = pods_.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

void GateRefusedPods::Refused(const std::string& uid, const std::string& ns,
                              const std::string& name, Clock::time_point now) {
  if (uid.empty()) return;
  if (!pods_.contains(uid) && pods_.size() >= max_pods_) {
    // Full: drop the pod refused longest ago (it still gets kube-scheduler's own retry).
    auto oldest = pods_.begin();
    for (auto p = pods_.begin(); p != pods_.end(); ++p) {
      if (p->second.at < oldest->second.at) oldest = p;
    }
    pods_.erase(oldest);
  }
  pods_[uid] = Entry{ns, name, now};
}

void GateRefusedPods::Forget(const std::string& uid) {
  pods_.erase(uid);
}

std::vector<GateRefusedPods::Target> GateRefusedPods::Due(Clock::time_point now,
                                                          Clock::duration settle) {
  std::vector<Target> due;
  for (auto it = pods_.begin(); it != pods_.end();) {
    if (now - it->second.at > forget_after_) {
      it = pods_.erase(it);
    } else if (now - it->second.at >= settle) {
      due.push_back(Target{it->first, it->second.ns, it->second.name});
      it = pods_.erase(it);
    } else {
      ++it;
    }
  }
  return due;
}

Requeuer::Requeuer(ClusterApi& api, std::function<uint64_t()> generation, Options options)
    : api_(api), generation_(std::move(generation)), options_(std::move(options)) {
  thread_ = std::thread([this] { Run(); });
}

void Requeuer::TurnedAway(const std::string& uid, const std::string& ns, const std::string& name) {
  const uint64_t generation = generation_();
  std::lock_guard lock(mu_);
  pods_.TurnedAway(uid, ns, name, generation, TurnedAwayPods::Clock::now());
}

void Requeuer::RefusedByGate(const std::string& uid, const std::string& ns,
                             const std::string& name) {
  std::lock_guard lock(mu_);
  // Its bind was asked for, so it passed a filter since any turn-away: that entry is stale, and
  // forgetting it keeps one pod from being patched twice in one poll.
  pods_.Forget(uid);
  refused_.Refused(uid, ns, name, GateRefusedPods::Clock::now());
}

void Requeuer::RefusedByLock(const std::string& uid, const std::string& ns,
                             const std::string& name) {
  std::lock_guard lock(mu_);
  pods_.Forget(uid);  // as in RefusedByGate: it passed a filter since
  lock_refused_.Refused(uid, ns, name, GateRefusedPods::Clock::now());
}

void Requeuer::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  pods_.Forget(uid);
  refused_.Forget(uid);
  lock_refused_.Forget(uid);
}

void Requeuer::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t Requeuer::nudged() const {
  std::lock_guard lock(mu_);
  return nudged_;
}

void Requeuer::Run() {
  struct Nudge {
    TurnedAwayPods::Target pod;
    const char* reason;
    bool refused;  // a bind refused (gate, lock): checked to be still there and unbound first
  };
  uint64_t seen = generation_();
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, options_.poll, [this] { return stop_; });
    if (stop_) break;
    std::vector<Nudge> nudges;
    const uint64_t generation = generation_();
    if (generation != seen && pods_.size() != 0) {
      for (TurnedAwayPods::Target& t : pods_.Due(generation, TurnedAwayPods::Clock::now()))
        nudges.push_back(Nudge{std::move(t), "gpu-capacity-freed", false});
    }
    seen = generation;
    if (refused_.size() != 0) {
      // The gate reads the elector's state under its own mutex: not while holding ours.
      lock.unlock();
      const bool open = !options_.gate_open || options_.gate_open();
      lock.lock();
      if (open) {
        for (TurnedAwayPods::Target& t :
             refused_.Due(GateRefusedPods::Clock::now(), options_.gate_settle))
          nudges.push_back(Nudge{std::move(t), "bind-gate-open", true});
      }
    }
    if (lock_refused_.size() != 0) {
      for (TurnedAwayPods::Target& t :
           lock_refused_.Due(GateRefusedPods::Clock::now(), options_.gate_settle))
        nudges.push_back(Nudge{std::move(t), "node-lock-busy", true});
    }
    if (nudges.empty()) continue;
    lock.unlock();
    const std::string at = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
    size_t done = 0;
    for (const Nudge& n : nudges) {
      const TurnedAwayPods::Target& t = n.pod;
      if (n.refused && !StillPending(t)) continue;
      const nlohmann::json patch = {
          {"metadata", {{"annotations", {{kCapacityFreedAnnotation, at}}}}}};
      Status s = api_.MergePatchPod(t.ns, t.name, patch);
      if (s.ok()) {
        ++done;
        log::Info("requeue", {{"pod", t.ns + "/" + t.name}, {"reason", n.reason}});
      } else if (s.code() != StatusCode::kNotFound) {
        log::Warn("requeue failed", {{"pod", t.ns + "/" + t.name}, {"error", s.message()}});
      }
    }
    lock.lock();
    nudged_ += done;
  }
}

bool Requeuer::StillPending(const TurnedAwayPods::Target& t) {
  // A pod refused by the gate may have been bound meanwhile by another replica (the previous
  // leader, before its term ended), or deleted and made again under its name: only this replica's
  // own binds reach Forget(). Annotating a bound pod would be harmless but noisy.
  Result<nlohmann::json> pod = api_.GetPod(t.ns, t.name);
  if (!pod.ok()) {
    if (pod.status().code() != StatusCode::kNotFound)
      log::Warn("requeue failed",
                {{"pod", t.ns + "/" + t.name}, {"error", pod.status().message()}});
    return false;
  }
  if (!pod->is_object()) return false;
  const nlohmann::json meta = pod->value("metadata", nlohmann::json::object());
  const nlohmann::json spec = pod->value("spec", nlohmann::json::object());
  const auto field = [](const nlohmann::json& obj, const char* key) {
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (const std::string uid = field(meta, "uid"); !uid.empty() && uid != t.uid) return false;
  if (!field(meta, "deletionTimestamp").empty()) return false;  // going away
  return field(spec, "nodeName").empty();
}

}  // namespace vgpu::scheduler
