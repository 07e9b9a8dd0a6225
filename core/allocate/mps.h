#pragma once

// The MPS operating mode's pure decisions (docs/mps.md): where a GPU's control daemon keeps its
// pipe and log directories on the host, what an MPS client container is told, and whether a pod
// may be answered in the node's mode at all. Shared by Allocate and the daemon supervisor so that
// both name the same directories.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/allocate/container_entry.h"
#include "core/allocate/pod_view.h"
#include "core/base/status.h"
#include "vgpu/env_contract.h"

namespace vgpu::allocate {

// Host directory under which every MPS GPU gets <uuid>/pipe and <uuid>/log, and all clients share
// shm/ (the device plugin's --mps-dir).
inline constexpr std::string_view kDefaultMpsRoot = "/tmp/vgpu-mps";
// Where a client container sees its GPU's pipe directory: MPS's own default, so that a process
// that lost CUDA_MPS_PIPE_DIRECTORY (a shell that scrubs its environment) still finds the daemon.
inline constexpr std::string_view kClientPipeDir = VGPU_DEFAULT_MPS_PIPE_DIRECTORY;
// MPS clients and their server exchange work through POSIX shared memory: the clients' /dev/shm
// must be the server's, so the host's <root>/shm is mounted over both.
inline constexpr std::string_view kClientShmDir = "/dev/shm";

struct MpsDirs {
  std::string gpu;   // <root>/<uuid>: 0700, root's alone
  std::string pipe;  // <root>/<uuid>/pipe: CUDA_MPS_PIPE_DIRECTORY of the daemon
  std::string log;   // <root>/<uuid>/log: CUDA_MPS_LOG_DIRECTORY of the daemon (not for clients)
  std::string shm;   // <root>/shm: /dev/shm of the daemon and of every client
  friend bool operator==(const MpsDirs&, const MpsDirs&) = default;
};

// Refuses a UUID that could leave `root` ("", ".", "..", a '/'): it becomes a directory name.
Result<MpsDirs> MpsDirsFor(std::string_view root, std::string_view gpu_uuid);

// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE from a vGPU's gpucores: 0 (no core limit asked) and anything
// >= 100 give 100; otherwise the percentage itself. MPS rounds a percentage up to the next SM
// count the hardware can partition (a TPC of 2 SMs on Volta and later), so a tenant gets at least
// its share, never less; 1 is the smallest value MPS accepts.
int ActiveThreadPercentage(int64_t cores);

// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: "<ordinal>=<MiB>M" for each device the container sees, in
// order, comma separated ("0=3000M").
std::string PinnedDeviceMemLimit(const std::vector<GrantedDevice>& devices);

// Fails closed before a container of `pod` is answered in `node_mode`: when the pod's
// nvidia.com/vgpu-mode names modes and `node_mode` is not among them (the scheduler never places
// such a pod here; an entry that says otherwise was written by someone else), and, on an MPS
// node, when the container was granted more than one GPU (a client process reaches one control
// daemon, and each daemon serves one GPU).
Status CheckModeGrant(const PodView& pod, std::string_view node_mode,
                      const std::vector<GrantedDevice>& devices, const std::string& container);

}  // namespace vgpu::allocate
