#pragma once

// When to (re)start a GPU's MPS control daemon and whether the GPU is healthy meanwhile. Pure:
// the supervisor (mps_daemon.h) runs the commands and supplies the clock.
//
// A GPU in MPS mode is healthy only while its daemon answers: a client whose daemon is gone runs
// outside MPS, where nothing partitions the SMs (libvgpu leaves them to MPS in this mode), so no
// new pod may land there meanwhile (fail closed). A daemon that dies is restarted at once the first
// time; when it keeps dying (or will not start) the attempts back off exponentially up to a cap
// and continue for as long as the plugin runs, so a transient driver problem heals by itself.

#include <chrono>

namespace vgpu::deviceplugin {

struct MpsBackoff {
  std::chrono::milliseconds first{1000};  // the wait after the second failure in a row
  std::chrono::milliseconds max{60000};
  // Up this long without a failure: the failure count starts over.
  std::chrono::milliseconds stable{30000};
};

struct MpsDaemonState {
  using Clock = std::chrono::steady_clock;
  bool up = false;   // answered at the last check (or started since)
  int failures = 0;  // deaths and failed starts since it last stayed up `stable` long
  Clock::time_point up_since{};
  Clock::time_point next_start{};  // no start attempt before this

  bool healthy() const { return up; }
};

// The wait before the next start after `failures` failures in a row: none after the first,
// then first, 2 x first, ... up to max.
std::chrono::milliseconds MpsRestartDelay(int failures, const MpsBackoff& b);

// Whether a start is due now (the daemon is down and its back-off has passed).
bool MpsStartDue(const MpsDaemonState& s, MpsDaemonState::Clock::time_point now);

// Records a liveness check of a daemon that was up. Returns true when the GPU's health changed.
bool MpsOnCheck(MpsDaemonState& s, bool alive, MpsDaemonState::Clock::time_point now,
                const MpsBackoff& b);

// Records a start attempt (the command succeeded and the daemon answers, or not). Returns true
// when the GPU's health changed.
bool MpsOnStart(MpsDaemonState& s, bool ok, MpsDaemonState::Clock::time_point now,
                const MpsBackoff& b);

}  // namespace vgpu::deviceplugin
