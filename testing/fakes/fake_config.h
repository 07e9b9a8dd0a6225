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
inline constexpr int kMaxNvLinks = 18;  // NVML_NVLINK_MAX_LINKS

// The PCIe path between two GPUs: NVML's nvmlGpuTopologyLevel_t values.
enum class PcieLevel {
  kInternal = 0,     // same board
  kSingle = 10,      // one PCIe switch
  kMultiple = 20,    // several PCIe switches
  kHostBridge = 30,  // the same host bridge
  kNode = 40,        // host bridges of one NUMA node
  kSystem = 50,      // across NUMA nodes (SMP interconnect)
};

// How two GPUs are connected (VGPU_FAKE_TOPOLOGY).
struct GpuLink {
  PcieLevel level = PcieLevel::kSystem;
  int nvlinks = 0;  // direct NVLinks between the two
  friend bool operator==(const GpuLink&, const GpuLink&) = default;
};
using Topology = std::array<std::array<GpuLink, kMaxDevices>, kMaxDevices>;

// Whether a context on one of the GPUs may map the other's memory (cuDeviceCanAccessPeer, NVML
// P2P status): over NVLink, or over PCIe up to a common host bridge; not between host bridges
// or across CPUs, as on most real servers.
inline bool PeerCapable(const GpuLink& link) {
  return link.nvlinks > 0 || link.level <= PcieLevel::kHostBridge;
}

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
  int64_t context_create_ns = 0;  // how long creating a context takes, its memory already taken
  int64_t exit_drain_ns = 0;      // how long a dead process's memory stays taken (and listed)
  uint64_t module_memory = 0;
  std::string state_dir;
  // Time slicing between contexts (VGPU_FAKE_TIMESLICE_US, VGPU_FAKE_SWITCH_US). Only the process
  // that creates the state file applies them: every process must simulate with the same values.
  int64_t timeslice_ns = 2'000'000;
  int64_t switch_ns = 0;
  // Added to every PID NVML reports (VGPU_FAKE_HOST_PID_OFFSET): NVML names processes by their
  // host PID, which differs from getpid() in a container with its own PID namespace.
  int64_t host_pid_offset = 0;
  // links[i][j]: how physical GPUs i and j are connected (symmetric; the diagonal is unused).
  Topology links{};
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

// VGPU_FAKE_TOPOLOGY for `count` GPUs: comma list of `<i>-<j>=<link>` and `*=<link>` (every
// pair not named), <link> = a PCIe level (internal, single, multiple, hostbridge, node, system)
// and/or nv<N> (N NVLinks, 1-18) joined by '+'; parts left out come from `*` (default: system,
// no NVLink). nullopt with `error` set on a malformed entry, a GPU index >= count, a pair named
// twice, or a GPU with more than 18 NVLinks in all.
std::optional<Topology> ParseTopology(std::string_view text, int count, std::string* error);
// The default: GPUs 2k and 2k+1 joined by 4 NVLinks under one NUMA node (node+nv4), every other
// pair across the system (0-1 and 2-3 NVLinked on a 4-GPU node).
std::string DefaultTopology(int count);

// Builds the configuration; on error returns nullopt and sets `error` to a message naming the
// variable and the accepted format.
std::optional<FakeConfig> LoadConfig(EnvLookup env, std::string* error);

// CUDA_VISIBLE_DEVICES semantics: returns the physical indices visible to CUDA, in CUDA ordinal
// order. Unset -> all. Entries are indices or UUID prefixes ("GPU-..."); like the real driver,
// the list stops at the first entry that is invalid, unknown or repeated.
std::vector<int> VisibleDevices(const std::optional<std::string>& cuda_visible_devices,
                                const FakeConfig& config);

}  // namespace vgpu::fake
