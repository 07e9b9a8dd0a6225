#pragma once

// The kubelets' shared watch: follows pod changes in the API server and hands each pod bound to
// a simulated node to that node's kubelet (on a small worker pool), and tells it when pods go.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "sim/cluster/sim_node.h"

namespace vgpu::sim {

class KubeletHub {
 public:
  KubeletHub(ApiServer& api, std::map<std::string, SimNode*> nodes, int workers);
  ~KubeletHub();  // Stop()
  void Stop();

  // Waits until every pod change made so far has been handled and no Allocate is in flight.
  // False on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);

  int allocate_failures() const { return failures_.load(); }
  int pods_started() const { return started_.load(); }
  // Pods deleted before their kubelet started them (not failures).
  int pods_gone_before_start() const { return gone_before_start_.load(); }
  // "ns/name: reason" of each failed Allocate.
  std::vector<std::string> failures() const;

 private:
  void WatchLoop();
  void WorkLoop();
  // Whether `pod` was deleted (or replaced by another of its name) since it was handed out.
  bool PodGone(const nlohmann::json& pod);

  ApiServer& api_;
  std::map<std::string, SimNode*> nodes_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> seen_rv_{0};
  std::atomic<int> failures_{0};
  std::atomic<int> started_{0};
  std::atomic<int> gone_before_start_{0};

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::pair<SimNode*, nlohmann::json>> work_;
  int in_flight_ = 0;
  std::set<std::string> handled_;  // pods already given to a kubelet
  std::vector<std::string> failure_text_;

  std::thread watch_thread_;
  std::vector<std::thread> workers_;
};

}  // namespace vgpu::sim
