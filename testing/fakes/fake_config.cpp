#include "fake_config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace vgpu::fake {
namespace {

constexpr std::string_view kDefaultName = "NVIDIA H100 80GB HBM3";
constexpr int kDefaultSms = 132;
constexpr uint64_t kMaxSchedulerUs = 10'000'000;  // 10 s: anything longer is a typo

// An error message from its pieces, in one string (no temporaries per `+`).
std::string Join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const std::string_view part : parts) out += part;
  return out;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return std::string(s);
}

std::optional<uint64_t> ParseUnsigned(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Element i of a per-GPU list; the last element repeats for GPUs beyond the list.
const std::string& PerGpu(const std::vector<std::string>& list, size_t i) {
  return list[std::min(i, list.size() - 1)];
}

std::optional<PcieLevel> ParseLevel(std::string_view word) {
  static constexpr std::pair<std::string_view, PcieLevel> kLevels[] = {
      {"internal", PcieLevel::kInternal}, {"single", PcieLevel::kSingle},
      {"multiple", PcieLevel::kMultiple}, {"hostbridge", PcieLevel::kHostBridge},
      {"node", PcieLevel::kNode},         {"system", PcieLevel::kSystem},
  };
  for (const auto& [name, level] : kLevels) {
    if (word == name) return level;
  }
  return std::nullopt;
}

// "<level>", "nv<N>" or both joined by '+'; parts left out stay as in `link`.
bool ParseLink(std::string_view text, GpuLink* link) {
  bool have_level = false;
  bool have_nv = false;
  for (const auto& part : SplitList(text, '+')) {
    if (part.size() > 2 && part.compare(0, 2, "nv") == 0) {
      auto n = ParseUnsigned(std::string_view(part).substr(2));
      if (!n || *n == 0 || *n > static_cast<uint64_t>(kMaxNvLinks) || have_nv) return false;
      link->nvlinks = static_cast<int>(*n);
      have_nv = true;
    } else if (auto level = ParseLevel(part); level && !have_level) {
      link->level = *level;
      have_level = true;
    } else {
      return false;
    }
  }
  return have_level || have_nv;
}

}  // namespace

std::string DefaultTopology(int count) {
  std::string out;
  for (int i = 0; i + 1 < count; i += 2) {
    out += std::to_string(i) + "-" + std::to_string(i + 1) + "=node+nv4,";
  }
  return out + "*=system";
}

std::optional<Topology> ParseTopology(std::string_view text, int count, std::string* error) {
  auto fail = [&](const std::string& msg) -> std::optional<Topology> {
    if (error != nullptr) *error = msg;
    return std::nullopt;
  };
  const std::string kFormat =
      " (expected a comma list of <i>-<j>=<link> and *=<link>, <link> = internal, single, "
      "multiple, hostbridge, node or system and/or nv<1-18> joined by '+', e.g. "
      "0-1=node+nv4,*=system)";
  GpuLink fallback;
  bool have_fallback = false;
  std::vector<std::pair<std::pair<int, int>, std::string>> pairs;
  if (!Trim(text).empty()) {
    for (const auto& entry : SplitList(text)) {
      const size_t eq = entry.find('=');
      if (eq == std::string::npos)
        return fail(Join({"VGPU_FAKE_TOPOLOGY: bad entry '", entry, "'", kFormat}));
      const std::string key = Trim(std::string_view(entry).substr(0, eq));
      const std::string value = Trim(std::string_view(entry).substr(eq + 1));
      if (key == "*") {
        if (have_fallback) return fail("VGPU_FAKE_TOPOLOGY: '*' given twice");
        have_fallback = true;
        if (!ParseLink(value, &fallback)) {
          return fail(Join({"VGPU_FAKE_TOPOLOGY: bad link '", value, "'", kFormat}));
        }
        continue;
      }
      const size_t dash = key.find('-');
      auto a = dash == std::string::npos ? std::nullopt : ParseUnsigned(key.substr(0, dash));
      auto b = dash == std::string::npos ? std::nullopt : ParseUnsigned(key.substr(dash + 1));
      if (!a || !b || *a == *b)
        return fail(Join({"VGPU_FAKE_TOPOLOGY: bad pair '", key, "'", kFormat}));
      if (*a >= static_cast<uint64_t>(count) || *b >= static_cast<uint64_t>(count)) {
        return fail("VGPU_FAKE_TOPOLOGY: pair '" + key + "' names a GPU beyond the " +
                    std::to_string(count) + " of VGPU_FAKE_GPUS");
      }
      std::pair<int, int> p{static_cast<int>(std::min(*a, *b)), static_cast<int>(std::max(*a, *b))};
      for (const auto& other : pairs) {
        if (other.first == p) return fail("VGPU_FAKE_TOPOLOGY: pair '" + key + "' given twice");
      }
      pairs.emplace_back(p, value);
    }
  }
  Topology links{};
  for (auto& row : links) row.fill(fallback);
  for (const auto& [p, value] : pairs) {
    GpuLink link = fallback;
    if (!ParseLink(value, &link))
      return fail(Join({"VGPU_FAKE_TOPOLOGY: bad link '", value, "'", kFormat}));
    links[p.first][p.second] = link;
    links[p.second][p.first] = link;
  }
  for (int i = 0; i < count; ++i) {
    int total = 0;
    for (int j = 0; j < count; ++j) {
      if (j != i) total += links[i][j].nvlinks;
    }
    if (total > kMaxNvLinks) {
      return fail("VGPU_FAKE_TOPOLOGY: GPU " + std::to_string(i) + " has " + std::to_string(total) +
                  " NVLinks in all; a GPU has at most " + std::to_string(kMaxNvLinks));
    }
  }
  return links;
}

std::optional<std::string> ProcessEnv(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read-only use
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::vector<std::string> SplitList(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(Trim(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

std::optional<uint64_t> ParseSize(std::string_view text) {
  std::string s = Trim(text);
  if (s.empty()) return std::nullopt;
  uint64_t mult = 1;
  switch (std::tolower(static_cast<unsigned char>(s.back()))) {
    case 'k':
      mult = 1ULL << 10;
      break;
    case 'm':
      mult = 1ULL << 20;
      break;
    case 'g':
      mult = 1ULL << 30;
      break;
    case 't':
      mult = 1ULL << 40;
      break;
    default:
      break;
  }
  if (mult != 1) s.pop_back();
  auto v = ParseUnsigned(s);
  if (!v || (*v != 0 && *v > UINT64_MAX / mult)) return std::nullopt;
  return *v * mult;
}

std::optional<std::array<unsigned char, 16>> ParseUuid(std::string_view text) {
  if (text.substr(0, 4) != "GPU-") return std::nullopt;
  text.remove_prefix(4);
  std::array<unsigned char, 16> out{};
  size_t digits = 0;
  for (char c : text) {
    if (c == '-') continue;
    int h = HexValue(c);
    if (h < 0 || digits >= 32) return std::nullopt;
    out[digits / 2] =
        static_cast<unsigned char>(out[digits / 2] | (h << (digits % 2 == 1 ? 0 : 4)));
    ++digits;
  }
  if (digits != 32) return std::nullopt;
  return out;
}

std::string DefaultUuid(int index) {
  char buf[64];
  (void)std::snprintf(buf, sizeof buf, "GPU-00000000-0000-0000-0000-0000000000%02x", index & 0xff);
  return buf;
}

std::optional<FakeConfig> LoadConfig(EnvLookup env, std::string* error) {
  auto fail = [&](const std::string& msg) -> std::optional<FakeConfig> {
    if (error != nullptr) *error = msg;
    return std::nullopt;
  };
  FakeConfig cfg;
  int count = 1;
  if (auto v = env("VGPU_FAKE_GPUS")) {
    auto n = ParseUnsigned(Trim(*v));
    if (!n || *n > static_cast<uint64_t>(kMaxDevices)) {
      return fail("VGPU_FAKE_GPUS='" + *v + "': expected an integer from 0 to " +
                  std::to_string(kMaxDevices));
    }
    count = static_cast<int>(*n);
  }
  auto mem_list = SplitList(env("VGPU_FAKE_GPU_MEMORY").value_or("16g"));
  auto sm_list = SplitList(env("VGPU_FAKE_GPU_SMS").value_or(std::to_string(kDefaultSms)));
  auto uuid_env = env("VGPU_FAKE_GPU_UUIDS");
  std::vector<std::string> uuid_list = uuid_env ? SplitList(*uuid_env) : std::vector<std::string>{};
  for (int i = 0; i < count; ++i) {
    GpuSpec gpu;
    auto mem = ParseSize(PerGpu(mem_list, i));
    if (!mem || *mem == 0) {
      return fail("VGPU_FAKE_GPU_MEMORY: bad size '" + PerGpu(mem_list, i) +
                  "' (expected bytes with optional k/m/g suffix, e.g. 16g)");
    }
    gpu.memory_bytes = *mem;
    auto sms = ParseUnsigned(PerGpu(sm_list, i));
    if (!sms || *sms == 0 || *sms > 100000) {
      return fail("VGPU_FAKE_GPU_SMS: bad SM count '" + PerGpu(sm_list, i) + "'");
    }
    gpu.sms = static_cast<int>(*sms);
    gpu.uuid = static_cast<size_t>(i) < uuid_list.size() ? uuid_list[i] : DefaultUuid(i);
    auto bytes = ParseUuid(gpu.uuid);
    if (!bytes) {
      return fail("VGPU_FAKE_GPU_UUIDS: bad UUID '" + gpu.uuid +
                  "' (expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
    }
    gpu.uuid_bytes = *bytes;
    for (const auto& other : cfg.gpus) {
      if (other.uuid_bytes == gpu.uuid_bytes)
        return fail("VGPU_FAKE_GPU_UUIDS: duplicate " + gpu.uuid);
    }
    cfg.gpus.push_back(std::move(gpu));
  }
  cfg.name = env("VGPU_FAKE_GPU_NAME").value_or(std::string(kDefaultName));
  auto ctx_mem = ParseSize(env("VGPU_FAKE_CONTEXT_MEMORY").value_or("64m"));
  if (!ctx_mem) return fail("VGPU_FAKE_CONTEXT_MEMORY: expected a size such as 64m");
  cfg.context_memory = *ctx_mem;
  auto create_us = ParseUnsigned(Trim(env("VGPU_FAKE_CONTEXT_CREATE_US").value_or("0")));
  if (!create_us || *create_us > kMaxSchedulerUs) {
    return fail("VGPU_FAKE_CONTEXT_CREATE_US: expected microseconds from 0 to " +
                std::to_string(kMaxSchedulerUs));
  }
  cfg.context_create_ns = static_cast<int64_t>(*create_us) * 1000;
  auto drain_ms = ParseUnsigned(Trim(env("VGPU_FAKE_EXIT_DRAIN_MS").value_or("0")));
  if (!drain_ms || *drain_ms > kMaxSchedulerUs / 1000) {
    return fail("VGPU_FAKE_EXIT_DRAIN_MS: expected milliseconds from 0 to " +
                std::to_string(kMaxSchedulerUs / 1000));
  }
  cfg.exit_drain_ns = static_cast<int64_t>(*drain_ms) * 1'000'000;
  auto mod_mem = ParseSize(env("VGPU_FAKE_MODULE_MEMORY").value_or("2m"));
  if (!mod_mem) return fail("VGPU_FAKE_MODULE_MEMORY: expected a size such as 2m");
  cfg.module_memory = *mod_mem;
  auto timeslice = ParseUnsigned(Trim(env("VGPU_FAKE_TIMESLICE_US").value_or("2000")));
  if (!timeslice || *timeslice == 0 || *timeslice > kMaxSchedulerUs) {
    return fail("VGPU_FAKE_TIMESLICE_US: expected microseconds from 1 to " +
                std::to_string(kMaxSchedulerUs));
  }
  cfg.timeslice_ns = static_cast<int64_t>(*timeslice) * 1000;
  auto switch_us = ParseUnsigned(Trim(env("VGPU_FAKE_SWITCH_US").value_or("0")));
  if (!switch_us || *switch_us > kMaxSchedulerUs) {
    return fail("VGPU_FAKE_SWITCH_US: expected microseconds from 0 to " +
                std::to_string(kMaxSchedulerUs));
  }
  cfg.switch_ns = static_cast<int64_t>(*switch_us) * 1000;
  auto offset = ParseUnsigned(Trim(env("VGPU_FAKE_HOST_PID_OFFSET").value_or("0")));
  if (!offset || *offset > 1'000'000'000) {
    return fail("VGPU_FAKE_HOST_PID_OFFSET: expected an integer from 0 to 1000000000");
  }
  cfg.host_pid_offset = static_cast<int64_t>(*offset);
  auto topology =
      ParseTopology(env("VGPU_FAKE_TOPOLOGY").value_or(DefaultTopology(count)), count, error);
  if (!topology) return std::nullopt;
  cfg.links = *topology;
  cfg.state_dir = env("VGPU_FAKE_STATE_DIR").value_or("/tmp/vgpu-fake-" + std::to_string(getuid()));
  if (cfg.state_dir.empty()) return fail("VGPU_FAKE_STATE_DIR is empty: give a writable directory");
  return cfg;
}

std::vector<int> VisibleDevices(const std::optional<std::string>& cuda_visible_devices,
                                const FakeConfig& config) {
  std::vector<int> out;
  const int n = static_cast<int>(config.gpus.size());
  if (!cuda_visible_devices) {
    for (int i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (const auto& entry : SplitList(*cuda_visible_devices)) {
    int found = -1;
    if (auto idx = ParseUnsigned(entry)) {
      if (*idx < static_cast<uint64_t>(n)) found = static_cast<int>(*idx);
    } else if (entry.size() > 4 && entry.substr(0, 4) == "GPU-") {
      for (int i = 0; i < n; ++i) {
        if (config.gpus[i].uuid.compare(0, entry.size(), entry) == 0) {
          if (found >= 0) {  // ambiguous prefix
            found = -1;
            break;
          }
          found = i;
        }
      }
    }
    if (found < 0 || std::find(out.begin(), out.end(), found) != out.end()) break;
    out.push_back(found);
  }
  return out;
}

}  // namespace vgpu::fake
