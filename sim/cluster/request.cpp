#include "sim/cluster/request.h"

namespace vgpu::sim {

VgpuRequest EffectiveRequest(const PodSpec& pod, const RequestDefaults& defaults) {
  const bool has_mem = pod.mem_mib.value_or(0) > 0;
  const bool has_percent = pod.mem_percent.has_value();
  const bool has_cores = pod.cores.has_value();
  VgpuRequest r;
  if (pod.gpus) {
    r.count = *pod.gpus;
  } else if (has_mem || has_percent || has_cores) {
    r.count = defaults.default_gpu_num;
  }
  if (r.count == 0) return r;
  if (has_mem) {
    r.mem_mib = *pod.mem_mib;
  } else if (has_percent) {
    r.mem_percent = *pod.mem_percent;
  } else if (defaults.default_mem_mib > 0) {
    r.mem_mib = defaults.default_mem_mib;
  } else {
    r.mem_percent = 100;
  }
  if (has_cores) {
    r.cores = *pod.cores;
  } else if (!has_mem && !has_percent) {
    r.cores = 100;  // a bare `nvidia.com/gpu` asks for whole cards
  } else {
    r.cores = defaults.default_cores;
  }
  return r;
}

int64_t MemoryNeeded(const VgpuRequest& request, int64_t card_mem_mib) {
  if (request.mem_mib > 0) return request.mem_mib;
  return card_mem_mib * request.mem_percent / 100;
}

}  // namespace vgpu::sim
