#include "sim/cluster/kubelet_hub.h"

#include "sim/cluster/pod_gone.h"

namespace vgpu::sim {

using nlohmann::json;

KubeletHub::KubeletHub(ApiServer& api, std::map<std::string, SimNode*> nodes, int workers)
    : api_(api), nodes_(std::move(nodes)) {
  // Start after the nodes exist: only later pod events matter.
  seen_rv_ = api_.store().resource_version();
  watch_thread_ = std::thread([this] { WatchLoop(); });
  for (int i = 0; i < std::max(1, workers); ++i) workers_.emplace_back([this] { WorkLoop(); });
}

KubeletHub::~KubeletHub() {
  Stop();
}

void KubeletHub::Stop() {
  if (stopping_.exchange(true)) return;
  api_.store().WakeAll();
  work_cv_.notify_all();
  if (watch_thread_.joinable()) watch_thread_.join();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void KubeletHub::WatchLoop() {
  const ResourceInfo& pods = *FindResource("v1", "pods");
  int64_t rv = seen_rv_.load();
  while (!stopping_.load()) {
    WatchBatch batch = api_.store().WaitEvents(pods, "", rv, std::chrono::milliseconds(200));
    if (batch.gone) {
      // Cannot happen with the simulator's history size; resync from now rather than stall.
      rv = api_.store().resource_version();
      seen_rv_ = rv;
      continue;
    }
    for (const WatchEvent& e : batch.events) {
      const json& pod = *e.object;
      const std::string key = PodKey(pod);
      const json spec = pod.value("spec", json::object());
      const std::string node = spec.value("nodeName", "");
      auto it = nodes_.find(node);
      if (e.type == "DELETED") {
        if (it != nodes_.end()) it->second->ReleasePod(key);
        std::lock_guard lock(mu_);
        handled_.erase(key);
        continue;
      }
      const std::string phase = pod.value("status", json::object()).value("phase", "Pending");
      if (it == nodes_.end() || phase != "Pending") continue;
      std::lock_guard lock(mu_);
      if (!handled_.insert(key).second) continue;
      work_.emplace_back(it->second, pod);
      work_cv_.notify_one();
    }
    rv = std::max(rv, batch.next_rv);
    {
      std::lock_guard lock(mu_);
      seen_rv_ = rv;
    }
    idle_cv_.notify_all();
  }
}

void KubeletHub::WorkLoop() {
  while (true) {
    std::pair<SimNode*, json> task;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_.load() || !work_.empty(); });
      if (stopping_.load()) return;
      task = std::move(work_.front());
      work_.pop_front();
      ++in_flight_;
    }
    const Status s = task.first->RunPod(task.second);
    // A pod deleted before its kubelet got to it (a short job whose departure came while the
    // workers lagged, on a loaded machine) is not a failed Allocate: a kubelet drops such a pod
    // unstarted. Only a pod that is still there counts.
    const bool gone = !s.ok() && PodGone(task.second);
    {
      std::lock_guard lock(mu_);
      --in_flight_;
      if (s.ok()) {
        ++started_;
      } else if (gone) {
        ++gone_before_start_;
      } else {
        ++failures_;
        failure_text_.push_back(PodKey(task.second) + ": " + s.ToString());
      }
    }
    idle_cv_.notify_all();
  }
}

bool KubeletHub::WaitIdle(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const int64_t target = api_.store().resource_version();
    std::unique_lock lock(mu_);
    const bool done = idle_cv_.wait_until(lock, deadline, [&] {
      return seen_rv_.load() >= target && work_.empty() && in_flight_ == 0;
    });
    if (!done) return false;
    // Kubelets write pod status; settle only when that produced no further changes.
    if (api_.store().resource_version() == target) return true;
  }
}

bool KubeletHub::PodGone(const json& pod) {
  const json meta = pod.value("metadata", json::object());
  return PodGoneSince(pod, api_.Get("pods", meta.value("namespace", ""), meta.value("name", "")));
}

std::vector<std::string> KubeletHub::failures() const {
  std::lock_guard lock(mu_);
  return failure_text_;
}

}  // namespace vgpu::sim
