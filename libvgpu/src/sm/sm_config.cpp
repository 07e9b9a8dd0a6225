#include "sm_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

namespace vgpu::sm {

Parsed<int32_t> ParseSmPercent(const char* text) {
  if (text == nullptr || *text == '\0') return {0, false};
  char* end = nullptr;
  long value = strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0) return {0, true};
  if (value >= 100) return {0, false};
  return {static_cast<int32_t>(value), false};
}

Parsed<Policy> ParsePolicy(const char* text) {
  if (text == nullptr || *text == '\0') return {Policy::kDefault, false};
  if (strcasecmp(text, "default") == 0) return {Policy::kDefault, false};
  if (strcasecmp(text, "force") == 0) return {Policy::kForce, false};
  if (strcasecmp(text, "disable") == 0) return {Policy::kDisable, false};
  return {Policy::kDefault, true};
}

namespace {

// A whole number of milliseconds in [low, high]; unset means `fallback_ms`, anything else is
// malformed and falls back too.
Parsed<int32_t> ParseMsInRange(const char* text, int32_t fallback_ms, long low, long high) {
  if (text == nullptr || *text == '\0') return {fallback_ms, false};
  char* end = nullptr;
  long value = strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < low || value > high) return {fallback_ms, true};
  return {static_cast<int32_t>(value), false};
}

}  // namespace

Parsed<int32_t> ParseAloneBurstMs(const char* text, int32_t fallback_ms) {
  return ParseMsInRange(text, fallback_ms, 0, 1000);
}

Parsed<int32_t> ParseSharedCreditMs(const char* text, int32_t fallback_ms) {
  return ParseMsInRange(text, fallback_ms, 1, 200);
}

Parsed<Priority> ParsePriority(const char* text) {
  if (text == nullptr || *text == '\0') return {Priority::kLow, false};
  if (text[0] == '0' && text[1] == '\0') return {Priority::kHigh, false};
  if (text[0] == '1' && text[1] == '\0') return {Priority::kLow, false};
  return {Priority::kLow, true};
}

DeviceSettings SettingsForDevice(GetEnvFn getenv_fn, int index) {
  char name[48];
  snprintf(name, sizeof(name), "CUDA_DEVICE_SM_LIMIT_%d", index);
  const char* per_device = getenv_fn(name);
  Parsed<int32_t> percent =
      ParseSmPercent(per_device != nullptr ? per_device : getenv_fn("CUDA_DEVICE_SM_LIMIT"));
  Parsed<Policy> policy = ParsePolicy(getenv_fn("GPU_CORE_UTILIZATION_POLICY"));
  Parsed<Priority> priority = ParsePriority(getenv_fn("CUDA_TASK_PRIORITY"));
  DeviceSettings settings{};
  settings.percent = policy.value == Policy::kDisable ? 0 : percent.value;
  settings.policy = policy.value;
  settings.priority = priority.value;
  settings.malformed = percent.malformed || policy.malformed || priority.malformed;
  return settings;
}

bool AnyDeviceLimited(GetEnvFn getenv_fn, int max_devices) {
  for (int i = 0; i < max_devices; ++i) {
    if (SettingsForDevice(getenv_fn, i).percent > 0) return true;
  }
  return false;
}

}  // namespace vgpu::sm
