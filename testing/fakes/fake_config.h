#pragma once

// Configuration of the simulated GPUs, read from the VGPU_FAKE_* environment variables
// (see docs/fake-driver.md). Parsing is pure so it can be tested with tables of cases.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::fake {

inline constexpr int kMaxDevices = 16;

struct GpuSpec {
  uint64_t memory_bytes = 0;
  int sms = 0;
  std::string uuid;                            // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  std::array<unsigned char, 16> uuid_bytes{};  // the 32 hex digits of `uuid`
};

struct FakeConfig {
  std::vector<GpuSpec> gpus;  // physical order (NVML index)
  std::string name;
  uint64_t context_memory = 0;
  uint64_t module_memory = 0;
  std::string state_dir;
  // Time slicing between contexts (VGPU_FAKE_TIMESLICE_US, VGPU_FAKE_SWITCH_US). Only the process
  // that creates the state file applies them: every process must simulate with the same values.
  int64_t timeslice_ns = 2'000'000;
  int64_t switch_ns = 0;
  // Added to every PID NVML reports (VGPU_FAKE_HOST_PID_OFFSET): NVML names processes by their
  // host PID, which differs from getpid() in a container with its own PID namespace.
  int64_t host_pid_offset = 0;
};

// Lookup of an environment variable; nullopt when unset. Injected so tests need no setenv.
using EnvLookup = std::optional<std::string> (*)(const char* name);
std::optional<std::string> ProcessEnv(const char* name);

// "16g", "64m", "2k", "1024" (powers of 1024). nullopt when malformed or overflowing.
std::optional<uint64_t> ParseSize(std::string_view text);
// "GPU-" + 32 hex digits with optional dashes. nullopt when malformed.
std::optional<std::array<unsigned char, 16>> ParseUuid(std::string_view text);
std::string DefaultUuid(int index);
std::vector<std::string> SplitList(std::string_view text, char sep = ',');

// Builds the configuration; on error returns nullopt and sets `error` to a message naming the
// variable and the accepted format.
std::optional<FakeConfig> LoadConfig(EnvLookup env, std::string* error);

// CUDA_VISIBLE_DEVICES semantics: returns the physical indices visible to CUDA, in CUDA ordinal
// order. Unset -> all. Entries are indices or UUID prefixes ("GPU-..."); like the real driver,
// the list stops at the first entry that is invalid, unknown or repeated.
std::vector<int> VisibleDevices(const std::optional<std::string>& cuda_visible_devices,
                                const FakeConfig& config);

}  // namespace vgpu::fake
