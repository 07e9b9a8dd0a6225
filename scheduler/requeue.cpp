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

Requeuer::Requeuer(ClusterApi& api, std::function<uint64_t()> generation, Options options)
    : api_(api), generation_(std::move(generation)), options_(options) {
  thread_ = std::thread([this] { Run(); });
}

void Requeuer::TurnedAway(const std::string& uid, const std::string& ns, const std::string& name) {
  const uint64_t generation = generation_();
  std::lock_guard lock(mu_);
  pods_.TurnedAway(uid, ns, name, generation, TurnedAwayPods::Clock::now());
}

void Requeuer::Forget(const std::string& uid) {
  std::lock_guard lock(mu_);
  pods_.Forget(uid);
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
  uint64_t seen = generation_();
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, options_.poll, [this] { return stop_; });
    if (stop_) break;
    const uint64_t generation = generation_();
    if (generation == seen || pods_.size() == 0) {
      seen = generation;
      continue;
    }
    seen = generation;
    std::vector<TurnedAwayPods::Target> due = pods_.Due(generation, TurnedAwayPods::Clock::now());
    lock.unlock();
    const std::string at = std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count());
    size_t done = 0;
    for (const TurnedAwayPods::Target& t : due) {
      const nlohmann::json patch = {
          {"metadata", {{"annotations", {{kCapacityFreedAnnotation, at}}}}}};
      Status s = api_.MergePatchPod(t.ns, t.name, patch);
      if (s.ok()) {
        ++done;
        log::Info("requeue", {{"pod", t.ns + "/" + t.name}, {"reason", "gpu-capacity-freed"}});
      } else if (s.code() != StatusCode::kNotFound) {
        log::Warn("requeue failed", {{"pod", t.ns + "/" + t.name}, {"error", s.message()}});
      }
    }
    lock.lock();
    nudged_ += done;
  }
}

}  // namespace vgpu::scheduler
