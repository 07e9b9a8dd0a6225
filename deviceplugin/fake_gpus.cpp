#include "deviceplugin/fake_gpus.h"

#include <cstdint>
#include <filesystem>
#include <system_error>

#include "core/base/whole_number.h"

namespace vgpu::deviceplugin {
namespace {

Result<int64_t> ParseInt(const std::string& key, const std::string& text) {
  Result<int64_t> v = ParseWholeNumber(text, 0, INT64_MAX);
  if (!v.ok()) return InvalidArgument("--fake-gpus: " + key + ": " + v.status().message());
  return v;
}

std::vector<std::string> SplitAny(const std::string& s, const std::string& seps) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (seps.find(c) != std::string::npos) {
      if (!cur.empty()) {
        out.push_back(cur);
      }
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) {
    out.push_back(cur);
  }
  return out;
}

}  // namespace

Result<FakeGpus> ParseFakeGpuSpec(const std::string& spec, const std::string& node) {
  // Split on ",<key>=" so that a model name may itself contain commas.
  static const std::set<std::string> kKeys = {"count", "memory",   "model", "uuids",
                                              "numa",  "topology", "faults"};
  std::map<std::string, std::string> kv;
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t eq = spec.find('=', pos);
    if (eq == std::string::npos) {
      return InvalidArgument("--fake-gpus: expected key=value at '" + spec.substr(pos) +
                             "' (keys: count, memory, model, uuids, numa, topology, faults)");
    }
    std::string key = spec.substr(pos, eq - pos);
    if (!kKeys.contains(key)) {
      return InvalidArgument("--fake-gpus: unknown key '" + key +
                             "' (keys: count, memory, model, uuids, numa, topology, faults)");
    }
    // The value runs to the next ",<known key>=".
    size_t end = spec.size();
    for (size_t c = spec.find(',', eq); c != std::string::npos; c = spec.find(',', c + 1)) {
      size_t next_eq = spec.find('=', c);
      if (next_eq != std::string::npos && kKeys.contains(spec.substr(c + 1, next_eq - c - 1))) {
        end = c;
        break;
      }
    }
    kv[key] = spec.substr(eq + 1, end - eq - 1);
    pos = end == spec.size() ? end : end + 1;
  }
  std::vector<std::string> uuids = SplitAny(kv["uuids"], ";|");
  int64_t count = static_cast<int64_t>(uuids.size());
  if (kv.contains("count")) {
    auto c = ParseInt("count", kv["count"]);
    if (!c.ok()) {
      return c.status();
    }
    count = *c;
    if (!uuids.empty() && static_cast<int64_t>(uuids.size()) != count) {
      return InvalidArgument("--fake-gpus: count=" + kv["count"] + " but " +
                             std::to_string(uuids.size()) + " uuids given");
    }
  }
  if (count <= 0 || count > 1024) {
    return InvalidArgument("--fake-gpus: need count between 1 and 1024 (or a uuids list)");
  }
  int64_t memory = 81559;
  if (kv.contains("memory")) {
    auto m = ParseInt("memory", kv["memory"]);
    if (!m.ok()) {
      return m.status();
    }
    if (*m == 0) {
      return InvalidArgument("--fake-gpus: memory must be > 0 MiB");
    }
    memory = *m;
  }
  int64_t numa = 0;
  if (kv.contains("numa")) {
    auto n = ParseInt("numa", kv["numa"]);
    if (!n.ok()) {
      return n.status();
    }
    numa = *n;
  }
  const std::string model =
      kv.contains("model") && !kv["model"].empty() ? kv["model"] : "NVIDIA H100 80GB HBM3";
  std::vector<GpuDevice> gpus;
  for (int64_t i = 0; i < count; ++i) {
    GpuDevice g;
    g.uuid = uuids.empty() ? "GPU-fake-" + node + "-" + std::to_string(i)
                           : uuids[static_cast<size_t>(i)];
    g.index = static_cast<int>(i);
    g.model = model;
    g.memory_mib = memory;
    g.numa = static_cast<int>(numa);
    gpus.push_back(std::move(g));
  }
  FakeGpus out;
  if (kv.contains("topology")) {
    std::vector<std::string> ids;
    ids.reserve(gpus.size());
    for (const GpuDevice& g : gpus) ids.push_back(g.uuid);
    Result<codec::GpuTopology> topology = codec::ParseTopologySpec(kv["topology"], ids);
    if (!topology.ok()) return topology.status().WithContext("--fake-gpus");
    out.topology = std::move(*topology);
  }
  if (kv.contains("faults")) {
    if (kv["faults"].empty() || kv["faults"][0] != '/') {
      return InvalidArgument("--fake-gpus: faults=" + kv["faults"] +
                             " must be an absolute folder path (a file <folder>/<uuid> makes "
                             "that GPU stop answering)");
    }
    out.faults_dir = kv["faults"];
  }
  out.gpus = std::move(gpus);
  return out;
}

Result<std::vector<GpuDevice>> ParseFakeGpus(const std::string& spec, const std::string& node) {
  Result<FakeGpus> fake = ParseFakeGpuSpec(spec, node);
  if (!fake.ok()) return fake.status();
  return std::move(fake->gpus);
}

Result<std::optional<XidEvent>> FakeGpuBackend::WaitXid(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  if (events_.empty()) {
    return std::optional<XidEvent>();
  }
  XidEvent e = events_.front();
  events_.pop_front();
  return std::optional<XidEvent>(std::move(e));
}

bool FakeGpuBackend::Responds(const std::string& uuid) {
  {
    std::lock_guard lock(mu_);
    if (silent_.contains(uuid)) return false;
  }
  if (faults_dir_.empty()) return true;
  // An error reading the folder is not a fault of the GPU: it keeps answering.
  std::error_code ec;
  return !std::filesystem::exists(std::filesystem::path(faults_dir_) / uuid, ec);
}

void FakeGpuBackend::InjectXid(XidEvent e) {
  {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }
  cv_.notify_all();
}

void FakeGpuBackend::SetResponding(const std::string& uuid, bool responds) {
  std::lock_guard lock(mu_);
  if (responds) {
    silent_.erase(uuid);
  } else {
    silent_.insert(uuid);
  }
}

}  // namespace vgpu::deviceplugin
