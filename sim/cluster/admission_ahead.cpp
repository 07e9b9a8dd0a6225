#include "sim/cluster/admission_ahead.h"

#include <algorithm>
#include <chrono>

namespace vgpu::sim {

Admitted AdmitTimed(ExtenderClient& client, const nlohmann::json& pod) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<AdmissionResult> result = client.Admit(pod);
  return Admitted{
      std::move(result),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()};
}

AdmissionAhead::AdmissionAhead(std::unique_ptr<ExtenderClient> client, std::vector<size_t> order,
                               std::function<nlohmann::json(size_t)> pod_of, size_t lookahead)
    : client_(std::move(client)),
      order_(std::move(order)),
      pod_of_(std::move(pod_of)),
      lookahead_(lookahead > 0 ? lookahead : 1) {
  size_t pods = 0;
  for (size_t idx : order_) pods = std::max(pods, idx + 1);
  state_.assign(pods, State::kPending);
  done_.resize(pods);
  thread_ = std::thread([this] { Loop(); });
}

AdmissionAhead::~AdmissionAhead() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::optional<Admitted> AdmissionAhead::Take(size_t idx) {
  std::unique_lock lock(mu_);
  ++taken_;
  cv_.notify_all();  // the window moved on
  if (idx >= state_.size() || state_[idx] == State::kTaken) return std::nullopt;
  if (state_[idx] == State::kPending) {
    state_[idx] = State::kTaken;
    return std::nullopt;
  }
  cv_.wait(lock, [&] { return state_[idx] == State::kDone; });
  state_[idx] = State::kTaken;
  std::optional<Admitted> out = std::move(done_[idx]);
  done_[idx].reset();
  return out;
}

void AdmissionAhead::Loop() {
  for (size_t pos = 0; pos < order_.size(); ++pos) {
    const size_t idx = order_[pos];
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || pos < taken_ + lookahead_; });
      if (stopping_) return;
      if (state_[idx] != State::kPending) continue;  // the loop got there first
      state_[idx] = State::kInFlight;
    }
    Admitted admitted = AdmitTimed(*client_, pod_of_(idx));
    {
      std::lock_guard lock(mu_);
      done_[idx].emplace(std::move(admitted));
      state_[idx] = State::kDone;
    }
    cv_.notify_all();
  }
}

}  // namespace vgpu::sim
