#pragma once

// The MPS control daemons of a node in MPS mode (docs/mps.md): one `nvidia-cuda-mps-control -d`
// per GPU, with CUDA_VISIBLE_DEVICES=<uuid> and its pipe and log directories under the MPS root
// (core/allocate/mps.h names them, Allocate mounts the same pipe directory into that GPU's pods).
// Liveness is the control program's own answer to get_server_list (it exits non-zero when no
// daemon listens on the pipe directory); restarts and health follow mps_policy.h. This is the
// I/O half: directories, processes; the decisions are pure.

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/allocate/mps.h"
#include "core/base/status.h"
#include "deviceplugin/mps_policy.h"

namespace vgpu::deviceplugin {

struct MpsOptions {
  std::string root{allocate::kDefaultMpsRoot};  // --mps-dir
  // The control program (searched in PATH when it has no '/'); CI points it at
  // testing/fakes/mps/nvidia-cuda-mps-control.
  std::string control = "nvidia-cuda-mps-control";
  MpsBackoff backoff;
  std::chrono::milliseconds command_timeout{10000};
};

// What one run of a program gave.
struct CommandResult {
  int exit_code = -1;  // -1: killed (timeout or signal)
  std::string output;  // stdout and stderr together, when captured
};

// Runs `argv` with the current environment plus `env`, `input` on stdin, and waits at most
// `timeout` for it to exit (then kills it). `capture`: collect its stdout and stderr; off for a
// program that leaves a daemon behind holding them open. An error when it cannot be started.
Result<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& input, std::chrono::milliseconds timeout,
                                 bool capture);

// Reaps children that exited and that no RunCommand is waiting for: control daemons and their
// servers, which `-d` orphans onto this process when it is PID 1 of its container (or a subreaper)
// and which would otherwise stay zombies. Returns how many it reaped.
int ReapOrphans();

class MpsSupervisor {
 public:
  using Clock = MpsDaemonState::Clock;

  MpsSupervisor(MpsOptions options, std::vector<std::string> gpu_uuids);
  ~MpsSupervisor();
  MpsSupervisor(const MpsSupervisor&) = delete;
  MpsSupervisor& operator=(const MpsSupervisor&) = delete;

  // Creates the directories (root and each GPU's 0700, each pipe directory 01777 for clients of
  // any UID, shm/ 01777) and starts every daemon. Errors only for what no retry can fix: a
  // directory that cannot be made, a GPU UUID that cannot name one. A daemon that does not start
  // leaves its GPU unhealthy and is retried by Tick.
  Status Start(Clock::time_point now);

  // One round: reaps orphans (ReapOrphans), checks every daemon that is up and starts every one
  // that is due. True when any
  // GPU's health differs from before the round (a daemon found dead and restarted at once does
  // not count). Runs the control program, so never under the caller's locks.
  bool Tick(Clock::time_point now);

  // GPUs whose daemon is not up.
  std::set<std::string> Unhealthy() const;

  // Asks every daemon to quit (`quit` on its pipe directory). Idempotent.
  void StopAll();

 private:
  struct Gpu {
    std::string uuid;
    allocate::MpsDirs dirs;
    MpsDaemonState state;
  };

  bool Alive(const Gpu& g) const;
  bool StartOne(const Gpu& g) const;
  std::map<std::string, std::string> EnvFor(const Gpu& g) const;

  MpsOptions options_;
  std::vector<std::string> uuids_;
  mutable std::mutex mu_;  // guards gpus_' states; commands run outside it
  std::vector<Gpu> gpus_;
  bool stopped_ = false;
};

}  // namespace vgpu::deviceplugin
