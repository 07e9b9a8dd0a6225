#pragma once

// The node GPU inventory of `hami.io/node-nvidia-register` (hami-compat.md §2), in both forms:
//  - JSON (HAMi v2.8+): [{"id":..,"index":..,"count":..,"devmem":..,"devcore":..,"type":..,
//    "numa":..,"mode":..,"health":..}], zero/false fields may be omitted;
//  - legacy text (<= v2.7): devices end with ':', fields separated by ',':
//    <uuid>,<count>,<devmem>,<devcore>,<type>,<numa>,<health>[,<index>,<mode>].
// Readers accept both (JSON starts with '['); which form a writer emits is the caller's setting.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace vgpu::codec {

struct DeviceInfo {
  std::string id;       // GPU UUID
  int32_t index = 0;    // NVML index
  int32_t count = 0;    // vGPU slots (device-split-count)
  int64_t devmem = 0;   // MiB, already multiplied by the memory scaling
  int32_t devcore = 0;  // 100 x core scaling
  std::string type;     // NvidiaDeviceType(model), e.g. "NVIDIA H100 80GB HBM3", "NVIDIA-Tesla T4"
  int32_t numa = 0;
  std::string mode;  // "hami-core" | "mig" | "mps"; empty when the writer left it out
  bool health = false;

  friend bool operator==(const DeviceInfo&, const DeviceInfo&) = default;
};

using NodeInventory = std::vector<DeviceInfo>;

// The `type` of an NVIDIA GPU from its NVML name, as HAMi's device plugin registers it: prefixed
// "NVIDIA-" only when the name does not already start with "NVIDIA" (case-sensitive), so an H100
// is "NVIDIA H100 80GB HBM3" and a Tesla T4 "NVIDIA-Tesla T4". The scheduler's metrics report it
// as device_type, and use-gputype selectors match it, so it must be HAMi's string exactly.
std::string NvidiaDeviceType(std::string_view model);

enum class InventoryFormat { kJson, kLegacyText };

std::string EncodeInventoryJson(const NodeInventory& devices);
// Legacy text with all 9 fields; `with_index_and_mode=false` writes the 7-field form of old HAMi.
std::string EncodeInventoryText(const NodeInventory& devices, bool with_index_and_mode = true);
std::string EncodeInventory(const NodeInventory& devices, InventoryFormat format);

Result<NodeInventory> DecodeInventoryJson(std::string_view text);
Result<NodeInventory> DecodeInventoryText(std::string_view text);
// Auto-detects the form: JSON when the first non-blank character is '['.
Result<NodeInventory> DecodeInventory(std::string_view text);

}  // namespace vgpu::codec
