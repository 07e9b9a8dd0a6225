#pragma once

// SM-limit settings read from the HAMi environment contract (hami-compat.md §6). Pure parsing: the
// caller hands in a getenv-like function, so tables of cases can test every rule without touching
// the process environment. No libstdc++ (this code is linked into libvgpu.so).

#include <stdint.h>

namespace vgpu::sm {

enum class Policy : int32_t {
  kDefault = 0,  // limit only while another container shares the GPU (flag in the region)
  kForce = 1,    // always hold the limit
  kDisable = 2,  // never limit
};

// CUDA_TASK_PRIORITY: 0 = high, 1 = low (HAMi's default when unset).
enum class Priority : int32_t { kHigh = 0, kLow = 1 };

// A parse outcome: the value to use plus whether the input was malformed (for a one-line warning).
template <typename T>
struct Parsed {
  T value;
  bool malformed;
};

// "30" -> 30. Unset, empty, 0 and values >= 100 mean unlimited and return 0. Garbage ("abc",
// "30%", "-5") is malformed and also unlimited: a typo must never throttle a tenant to zero.
Parsed<int32_t> ParseSmPercent(const char* text);

// "force" | "disable" | "default" (case-insensitive); unset = default; anything else is malformed
// and falls back to default.
Parsed<Policy> ParsePolicy(const char* text);

// "0" = high, "1" = low; unset = low; anything else is malformed and falls back to low.
Parsed<Priority> ParsePriority(const char* text);

// VGPU_SM_ALONE_BURST_MS (a vgpu extension, not HAMi's): how much GPU work a limited tenant alone
// on its GPU runs in one stretch, in ms (gcra.h, AloneResumeCreditNs). Unset = `fallback_ms`;
// 0 = no long stretches (as beside other tenants); at most 1000; anything else is malformed and
// falls back.
Parsed<int32_t> ParseAloneBurstMs(const char* text, int32_t fallback_ms);

// VGPU_SM_SHARED_CREDIT_MS: the budget (ms of wall time at the limit's rate) a throttled launch
// waits to build up beside other tenants before it goes; 1..200 (the burst window); anything
// else is malformed and falls back.
Parsed<int32_t> ParseSharedCreditMs(const char* text, int32_t fallback_ms);

using GetEnvFn = const char* (*)(const char* name);

struct DeviceSettings {
  int32_t percent;  // 1..99 = limited; 0 = unlimited (after the policy is applied)
  Policy policy;
  Priority priority;
  bool malformed;  // some variable was malformed (the caller warns once)
};

// Settings for the device with ordinal `index` among the visible devices:
// CUDA_DEVICE_SM_LIMIT_<index> wins over CUDA_DEVICE_SM_LIMIT; policy `disable` forces unlimited.
DeviceSettings SettingsForDevice(GetEnvFn getenv_fn, int index);

// True when any device index in [0, max_devices) may be limited: lets the launch path skip all
// work in processes that have no limit at all.
bool AnyDeviceLimited(GetEnvFn getenv_fn, int max_devices);

}  // namespace vgpu::sm
