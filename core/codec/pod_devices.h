#pragma once

// The pod device list of `hami.io/vgpu-devices-allocated` / `-to-allocate` (hami-compat.md §3):
// one entry per container (init containers first, then app containers, spec order), every entry
// ends with ';', every device inside it is `<uuid>,<vendor>,<memMiB>,<cores>` ending with ':'.
// Empty entries keep the container index mapping and must survive a round trip.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace vgpu::codec {

struct ContainerDevice {
  std::string uuid;
  std::string vendor;   // "NVIDIA" for NVIDIA GPUs
  int64_t mem_mib = 0;  // device memory granted, MiB
  int32_t cores = 0;    // % of the card's SMs, 0 = no limit

  friend bool operator==(const ContainerDevice&, const ContainerDevice&) = default;
};

using ContainerDevices = std::vector<ContainerDevice>;
using PodDevices = std::vector<ContainerDevices>;  // index = container index (init first)

// Exact HAMi encoding: ";" after each entry, ":" after each device.
std::string EncodePodDevices(const PodDevices& pod);

// Strict decoding. An empty string is a pod with no entries. Errors name the entry and device.
Result<PodDevices> DecodePodDevices(std::string_view text);

// Index of the first non-empty entry at or after `from`, or -1. The device plugin's Allocate
// consumes entries in this order.
int FirstNonEmptyEntry(const PodDevices& pod, size_t from = 0);

}  // namespace vgpu::codec
