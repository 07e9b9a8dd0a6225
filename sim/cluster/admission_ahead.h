#pragma once

// Pods are admitted (the mutating webhook) on a thread of their own, a few arrivals ahead of the
// scheduling loop, as a real cluster's clients create pods while kube-scheduler schedules others:
// the webhook round trip leaves the loop's per-pod path. Only for scenarios without quotas, where
// an admission cannot depend on what the cluster holds at the pod's arrival (docs/sim.md).

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "sim/cluster/extender_client.h"

namespace vgpu::sim {

struct Admitted {
  Result<AdmissionResult> result;
  double ms = 0;  // the webhook round trip
};

// One webhook round trip, timed.
Admitted AdmitTimed(ExtenderClient& client, const nlohmann::json& pod);

class AdmissionAhead {
 public:
  // `order`: the scenario's pod indices in arrival order; `pod_of(i)`: pod i's object (called on
  // the thread: it must only read); at most `lookahead` admissions ahead of the loop's Take.
  AdmissionAhead(std::unique_ptr<ExtenderClient> client, std::vector<size_t> order,
                 std::function<nlohmann::json(size_t)> pod_of, size_t lookahead);
  ~AdmissionAhead();
  AdmissionAhead(const AdmissionAhead&) = delete;
  AdmissionAhead& operator=(const AdmissionAhead&) = delete;

  // Pod `idx`'s admission, waiting for it while the thread is admitting it. nullopt when the
  // thread has not reached it: the caller admits the pod itself and the thread skips it. Each
  // arrival is taken once.
  std::optional<Admitted> Take(size_t idx);

 private:
  enum class State { kPending, kInFlight, kDone, kTaken };
  void Loop();

  std::unique_ptr<ExtenderClient> client_;
  const std::vector<size_t> order_;
  const std::function<nlohmann::json(size_t)> pod_of_;
  const size_t lookahead_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<State> state_;                   // per pod index
  std::vector<std::optional<Admitted>> done_;  // per pod index, while kDone
  size_t taken_ = 0;                           // Take calls so far
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace vgpu::sim
