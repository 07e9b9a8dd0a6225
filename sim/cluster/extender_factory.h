#pragma once

// Starts the real extender + webhook (the vgpu-scheduler library) in-process for a simulation
// run, wired to the run's API server exactly as the deployed binary is: REST client, watches
// feeding its cluster model, handshake writer, HTTP server on an ephemeral port.

#include "sim/cluster/runner.h"

namespace vgpu::sim {

struct RealExtenderOptions {
  bool handshake = true;  // HAMi v2.8+ node liveness handshake with the device plugins
  std::chrono::milliseconds lock_wait{30000};
};

ExtenderFactory RealExtenderFactory(RealExtenderOptions options = {});

}  // namespace vgpu::sim
