#pragma once

// The environment `vgpu run` gives a command: libvgpu.so preloaded and HAMi's env contract
// (docs/libvgpu.md). Pure: no I/O, unit-tested with tables of cases.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace vgpu::run {

struct RunOptions {
  std::string gpus;                    // "0,1" or UUIDs; empty = every GPU
  std::optional<uint64_t> gpumem_mib;  // per GPU
  std::optional<int> gpumem_percent;   // per GPU, 1..100
  std::optional<int> gpucores;         // per GPU, 0..100 (0 or 100 = unlimited)
  bool oom_killer = false;
  // --mode mps: the command is a client of the MPS control daemon whose pipe directory is
  // `mps_pipe_dir`; MPS partitions the SMs (gpucores -> CUDA_MPS_ACTIVE_THREAD_PERCENTAGE) and caps
  // pinned memory (gpumem -> CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), libvgpu keeps enforcing memory and
  // does not time-slice.
  bool mps = false;
  std::string mps_pipe_dir;
};

using EnvMap = std::map<std::string, std::string>;

// Splits and validates --gpus (indices or GPU-/MIG- UUIDs, no duplicates, at most 16).
Result<std::vector<std::string>> ParseGpuList(const std::string& gpus);

// A GPU of the host as NVML numbers and names it.
struct HostGpu {
  int index = 0;
  std::string uuid;
};

// Whether every entry of --gpus (ParseGpuList's) names one of the host's GPUs: an index below
// their count, or a GPU- UUID (letter case ignored; a prefix must name exactly one GPU, as
// CUDA_VISIBLE_DEVICES reads it). MIG- UUIDs are not checked: NVML lists whole GPUs. The error
// names the entry and lists the host's GPUs: "--gpus 5: no such GPU (this node has 1: 0 GPU-..)".
Status CheckGpusPresent(const std::vector<std::string>& gpus, const std::vector<HostGpu>& host);

// Variables to set for the command. `inherited_preload` is the caller's LD_PRELOAD (kept after
// libvgpu, so the library is first). Options are validated here.
Result<EnvMap> BuildRunEnvironment(const RunOptions& options, const std::string& library,
                                   const std::string& region, const std::string& inherited_preload);

// Inherited variables that would override or undo the limits `vgpu run` sets, to be removed from
// the command's environment: every CUDA_DEVICE_MEMORY_LIMIT[_<i>] and CUDA_DEVICE_SM_LIMIT[_<i>]
// that `env` does not set (libvgpu prefers `_<i>` over the plain variable that `vgpu run` sets
// without --gpus, so a stale CUDA_DEVICE_MEMORY_LIMIT_0=100g would beat --gpumem 1024).
std::vector<std::string> InheritedLimitsToDrop(const std::vector<std::string>& inherited_names,
                                               const EnvMap& env);

// The command `vgpu run` starts, from what CLI11 parsed (run_command.cpp: positionals at the end,
// so the first word that is not one of run's options starts the command and every word after it,
// flags and "--" included, is the command's, in order). `positional`: those words; `remaining`:
// the words CLI11 did not take, i.e. the "--" separator and any flag of run's options it does not
// know. Such a flag is refused, not passed to the command or dropped: `vgpu run --oom-kill -- cmd`
// (a typo of --oom-killer) must not run cmd without it. Empty: no command given.
Result<std::vector<std::string>> CommandWords(const std::vector<std::string>& positional,
                                              const std::vector<std::string>& remaining);

// First existing candidate for libvgpu.so: --lib, $VGPU_LIBRARY, <bin>/../lib/libvgpu.so,
// <bin>/../lib/vgpu/libvgpu.so, the build tree. `exists` is injected for tests.
Result<std::string> FindLibrary(const std::string& flag, const std::string& env_value,
                                const std::string& binary_dir, const std::string& build_tree_path,
                                bool (*exists)(const std::string&));

}  // namespace vgpu::run
