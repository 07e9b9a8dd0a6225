#include "kube/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace vgpu::kube {

RateLimiter::RateLimiter(double qps, int burst, Clock clock)
    : qps_(qps), burst_(std::max(1, burst)), clock_(std::move(clock)) {
  if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
  tokens_ = burst_;
  last_ = clock_();
}

std::chrono::nanoseconds RateLimiter::Reserve() {
  std::lock_guard lock(mu_);
  ++granted_;
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  auto now = clock_();
  double elapsed = std::chrono::duration<double>(now - last_).count();
  if (elapsed > 0) {
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1;  // may go negative: a debt paid by waiting
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  ++throttled_;
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

void RateLimiter::Acquire() {
  auto wait = Reserve();
  if (wait.count() > 0) std::this_thread::sleep_for(wait);
}

int64_t RateLimiter::granted() const {
  std::lock_guard lock(mu_);
  return granted_;
}

int64_t RateLimiter::throttled() const {
  std::lock_guard lock(mu_);
  return throttled_;
}

}  // namespace vgpu::kube
