#pragma once

// The vGPU request a pod ends up with after HAMi's defaults (hami-compat §1), and how much of a
// given GPU it needs. Pure functions; the invariant checker and the reports use them.

#include <cstdint>

#include "sim/cluster/scenario.h"

namespace vgpu::sim {

struct RequestDefaults {
  int64_t default_mem_mib = 0;  // defaultMem: 0 = the whole card
  int default_cores = 0;        // defaultCores
  int default_gpu_num = 1;      // defaultGPUNum, added when only gpumem/gpucores are given
};

struct VgpuRequest {
  int count = 0;        // vGPUs, each on a different physical GPU; 0 = asks for no GPU
  int64_t mem_mib = 0;  // > 0: absolute MiB per vGPU
  int mem_percent = 0;  // used when mem_mib == 0: percent of the card's memory
  int cores = 0;        // percent of the card's SMs per vGPU; 100 = exclusive

  friend bool operator==(const VgpuRequest&, const VgpuRequest&) = default;
};

VgpuRequest EffectiveRequest(const PodSpec& pod, const RequestDefaults& defaults = {});

// MiB of a card with `card_mem_mib` that one vGPU of `request` takes.
int64_t MemoryNeeded(const VgpuRequest& request, int64_t card_mem_mib);

}  // namespace vgpu::sim
