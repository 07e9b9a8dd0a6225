#pragma once

// Client-side token bucket (like client-go's): `burst` requests at once, then `qps` per second.
// Callers reserve a token and wait for their slot, so concurrent callers queue in order.

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>

namespace vgpu::kube {

class RateLimiter {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // qps <= 0 disables limiting. The clock is injectable so tests count instead of timing.
  RateLimiter(double qps, int burst, Clock clock = {});

  // Takes a token; returns how long the caller must wait before using it (zero if one was free).
  std::chrono::nanoseconds Reserve();
  // Reserve() and sleep.
  void Acquire();

  int64_t granted() const;    // tokens handed out
  int64_t throttled() const;  // of which had to wait

 private:
  double qps_;
  double burst_;
  Clock clock_;
  mutable std::mutex mu_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
  int64_t granted_ = 0;
  int64_t throttled_ = 0;
};

}  // namespace vgpu::kube
