#pragma once

// `vgpu run --mode mps`: the MPS control daemon the command becomes a client of. One daemon per
// caller (its pipe directory private to the caller) serves every `vgpu run --mode mps` of that
// caller, so two runs share one MPS server and run side by side, partitioned by their
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, instead of taking turns. The first run that finds no daemon
// starts one and leaves it running for the next (docs/libvgpu.md, "vgpu run --mode mps").

#include <cstdint>
#include <ostream>
#include <string>

#include "core/base/status.h"

namespace vgpu::run {

// The pipe directory: --mps-pipe, else $CUDA_MPS_PIPE_DIRECTORY, else /tmp/vgpu-mps-<uid>/pipe.
std::string MpsPipeDirectory(const std::string& flag, const std::string& env_value, uint32_t uid);

// Whether a control daemon accepts connections on <pipe_dir>/control.
bool MpsDaemonAnswers(const std::string& pipe_dir);

// Makes sure a control daemon serves `pipe_dir`: connects, or (under a lock, so that runs started
// together start one daemon) starts `control_program -d` with the pipe directory and a log
// directory beside it, then waits until it answers. The directories it creates are 0700 and the
// caller's; an existing pipe directory must be the caller's or root's and writable by nobody else
// (whoever can write it can steer the daemon). Writes one line to `note` when it starts a daemon.
Status EnsureMpsDaemon(const std::string& pipe_dir, uint32_t uid,
                       const std::string& control_program, std::ostream& note);

}  // namespace vgpu::run
