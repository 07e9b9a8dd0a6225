#pragma once

// GET /healthz as the kubelet's probe does it: a new connection per probe, the whole answer read.

#include <chrono>
#include <vector>

namespace vgpu::bench {

struct ProbeStats {
  std::vector<double> ms;  // answered probes (200), connect to last byte
  int failed = 0;          // no 200 within the timeout

  // p in [0, 1] of the answered probes; 0 when none answered.
  double Percentile(double p) const;
};

// Probes 127.0.0.1:port one after the other for `window`, `gap` apart; each probe has `timeout`.
ProbeStats ProbeHealth(int port, std::chrono::milliseconds window, std::chrono::milliseconds gap,
                       std::chrono::milliseconds timeout);

}  // namespace vgpu::bench
