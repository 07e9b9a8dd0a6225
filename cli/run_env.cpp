#include "cli/run_env.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "core/base/strings.h"
#include "vgpu/env_contract.h"

namespace vgpu::run {

namespace {

bool IsIndex(const std::string& s) {
  if (s.empty() || s.size() > 3) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsUuid(const std::string& s) {
  return s.size() > 4 && (s.rfind("GPU-", 0) == 0 || s.rfind("MIG-", 0) == 0) &&
         s.find_first_of(" \t") == std::string::npos;
}

}  // namespace

Result<std::vector<std::string>> ParseGpuList(const std::string& gpus) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= gpus.size()) {
    size_t comma = gpus.find(',', start);
    if (comma == std::string::npos) comma = gpus.size();
    const std::string token = gpus.substr(start, comma - start);
    if (!IsIndex(token) && !IsUuid(token)) {
      return InvalidArgument("--gpus: '" + token +
                             "' is neither a GPU index nor a GPU-/MIG- UUID (e.g. --gpus 0,1)");
    }
    if (!seen.insert(token).second) return InvalidArgument("--gpus: GPU '" + token + "' twice");
    out.push_back(token);
    start = comma + 1;
  }
  if (out.size() > 16) return InvalidArgument("--gpus: at most 16 GPUs");
  return out;
}

namespace {

std::string DescribeHost(const std::vector<HostGpu>& host) {
  if (host.empty()) return "this node has no GPU";
  std::string out = "this node has " + std::to_string(host.size()) + ":";
  for (size_t i = 0; i < host.size(); ++i) {
    out += (i == 0 ? " " : ", ") + std::to_string(host[i].index) + " " + host[i].uuid;
  }
  return out;
}

}  // namespace

Status CheckGpusPresent(const std::vector<std::string>& gpus, const std::vector<HostGpu>& host) {
  for (const std::string& gpu : gpus) {
    size_t matches = 0;
    if (IsIndex(gpu)) {
      const int index = std::stoi(gpu);
      matches = static_cast<size_t>(std::count_if(
          host.begin(), host.end(), [&](const HostGpu& h) { return h.index == index; }));
    } else if (gpu.rfind("MIG-", 0) == 0) {
      continue;
    } else {
      const std::string want = Lower(gpu);
      matches = static_cast<size_t>(std::count_if(host.begin(), host.end(), [&](const HostGpu& h) {
        return Lower(h.uuid).rfind(want, 0) == 0;
      }));
    }
    if (matches == 0) {
      return NotFound("--gpus " + gpu + ": no such GPU (" + DescribeHost(host) + ")");
    }
    if (matches > 1) {
      return InvalidArgument("--gpus " + gpu + ": names " + std::to_string(matches) +
                             " GPUs; give more of the UUID (" + DescribeHost(host) + ")");
    }
  }
  return Status::Ok();
}

Result<EnvMap> BuildRunEnvironment(const RunOptions& options, const std::string& library,
                                   const std::string& region,
                                   const std::string& inherited_preload) {
  if (options.gpumem_mib && options.gpumem_percent) {
    return InvalidArgument("--gpumem and --gpumem-percent exclude each other");
  }
  if (options.gpumem_mib && *options.gpumem_mib == 0) {
    return InvalidArgument("--gpumem must be at least 1 (MiB)");
  }
  if (options.gpumem_percent && (*options.gpumem_percent < 1 || *options.gpumem_percent > 100)) {
    return InvalidArgument("--gpumem-percent must be within 1..100");
  }
  if (options.gpucores && (*options.gpucores < 0 || *options.gpucores > 100)) {
    return InvalidArgument("--gpucores must be within 0..100");
  }
  EnvMap env;
  env["LD_PRELOAD"] = inherited_preload.empty() ? library : library + ":" + inherited_preload;
  env[VGPU_ENV_SHARED_CACHE] = region;
  std::string mem;
  if (options.gpumem_mib) mem = std::to_string(*options.gpumem_mib) + "m";
  if (options.gpumem_percent) mem = std::to_string(*options.gpumem_percent) + "%";
  const std::string cores = options.gpucores ? std::to_string(*options.gpucores) : "";
  if (!options.gpus.empty()) {
    auto gpus = ParseGpuList(options.gpus);
    if (!gpus.ok()) return gpus.status();
    env[VGPU_ENV_VISIBLE_DEVICES] = options.gpus;
    env[VGPU_ENV_NVIDIA_VISIBLE_DEVICES] = options.gpus;
    // Limits index the visible devices, as the device plugin writes them.
    for (size_t i = 0; i < gpus->size(); ++i) {
      if (!mem.empty()) env[std::string(VGPU_ENV_MEMORY_LIMIT) + "_" + std::to_string(i)] = mem;
      if (!cores.empty()) env[std::string(VGPU_ENV_SM_LIMIT) + "_" + std::to_string(i)] = cores;
    }
  } else {
    if (!mem.empty()) env[VGPU_ENV_MEMORY_LIMIT] = mem;
    if (!cores.empty()) env[VGPU_ENV_SM_LIMIT] = cores;
  }
  if (options.oom_killer) env[VGPU_ENV_OOM_KILLER] = "true";
  if (options.mps) {
    if (options.mps_pipe_dir.empty() || options.mps_pipe_dir.front() != '/') {
      return InvalidArgument("--mps-pipe must be an absolute directory");
    }
    env[VGPU_ENV_SHARING_MODE] = VGPU_SHARING_MPS;
    env[VGPU_ENV_MPS_PIPE_DIRECTORY] = options.mps_pipe_dir;
    // MPS reads 0 as an error and 100 as the whole GPU: only a real share is handed on.
    if (options.gpucores && *options.gpucores > 0 && *options.gpucores < 100) {
      env[VGPU_ENV_MPS_ACTIVE_THREAD_PERCENTAGE] = std::to_string(*options.gpucores);
    }
    // Per visible ordinal, as MPS numbers the client's devices. A percentage of the card is left to
    // libvgpu alone (it knows the card's size; MPS takes only absolute amounts).
    if (options.gpumem_mib) {
      size_t visible = 1;
      if (!options.gpus.empty()) visible = ParseGpuList(options.gpus)->size();
      std::string pinned;
      for (size_t i = 0; i < visible; ++i) {
        if (!pinned.empty()) pinned += ",";
        pinned += std::to_string(i) + "=" + std::to_string(*options.gpumem_mib) + "M";
      }
      env[VGPU_ENV_MPS_PINNED_DEVICE_MEM_LIMIT] = pinned;
    }
  }
  return env;
}

std::vector<std::string> InheritedLimitsToDrop(const std::vector<std::string>& inherited_names,
                                               const EnvMap& env) {
  // NAME or NAME_<digits>, for the limit variables.
  const auto is_limit = [](const std::string& name) {
    for (const std::string_view base : {VGPU_ENV_MEMORY_LIMIT, VGPU_ENV_SM_LIMIT}) {
      if (name.rfind(base, 0) != 0) continue;
      const std::string_view rest = std::string_view(name).substr(base.size());
      if (rest.empty()) return true;
      if (rest.front() == '_' && rest.size() > 1 &&
          rest.find_first_not_of("0123456789", 1) == std::string_view::npos) {
        return true;
      }
    }
    return false;
  };
  std::vector<std::string> drop;
  for (const std::string& name : inherited_names) {
    if (is_limit(name) && env.count(name) == 0) drop.push_back(name);
  }
  return drop;
}

Result<std::vector<std::string>> CommandWords(const std::vector<std::string>& positional,
                                              const std::vector<std::string>& remaining) {
  for (const std::string& word : remaining) {
    if (word == "--") continue;  // the separator, which CLI11 reports as not taken
    std::string flag = word.substr(0, word.find('='));
    return InvalidArgument("unknown flag " + flag +
                           " (see 'vgpu run --help'); the command and its own flags go after "
                           "--, e.g. vgpu run --gpumem 4g -- python train.py --epochs 3");
  }
  return positional;
}

Result<std::string> FindLibrary(const std::string& flag, const std::string& env_value,
                                const std::string& binary_dir, const std::string& build_tree_path,
                                bool (*exists)(const std::string&)) {
  if (!flag.empty()) {
    if (exists(flag)) return flag;
    return NotFound("--lib " + flag + ": no such file");
  }
  if (!env_value.empty()) {
    if (exists(env_value)) return env_value;
    return NotFound(VGPU_ENV_LIBRARY "=" + env_value + ": no such file");
  }
  std::vector<std::string> candidates;
  if (!binary_dir.empty()) {
    candidates.push_back(binary_dir + "/../lib/libvgpu.so");
    candidates.push_back(binary_dir + "/../lib/vgpu/libvgpu.so");
  }
  if (!build_tree_path.empty()) candidates.push_back(build_tree_path);
  for (const auto& c : candidates) {
    if (exists(c)) return c;
  }
  std::string tried;
  for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
  return NotFound("libvgpu.so not found (tried " + tried +
                  "); pass --lib PATH or set " VGPU_ENV_LIBRARY);
}

}  // namespace vgpu::run
