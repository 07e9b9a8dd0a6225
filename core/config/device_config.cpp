#include "core/config/device_config.h"

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "core/codec/bounded_json.h"

namespace vgpu::config {

codec::ResourceNames NvidiaConfig::resource_names() const {
  return {resource_count_name, resource_memory_name, resource_memory_percentage_name,
          resource_core_name, resource_priority_name};
}

namespace {

std::string Shown(const YAML::Node& n) {
  if (n.IsScalar()) return "\"" + n.Scalar() + "\"";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "null";
}

// Reads `key` of `map` into `out` when present; a wrong type names the key.
template <typename T>
Status ReadYaml(const YAML::Node& map, const char* key, const char* want, T& out) {
  YAML::Node n = map[key];
  if (!n.IsDefined() || n.IsNull()) return Status::Ok();
  try {
    if (!n.IsScalar()) throw YAML::Exception(YAML::Mark(), "not a scalar");
    out = n.as<T>();
  } catch (const YAML::Exception&) {
    return InvalidArgument(std::string("device-config.yaml: nvidia.") + key + ": want " + want +
                           ", got " + Shown(n));
  }
  return Status::Ok();
}

Status CheckCorePolicy(const std::string& policy, const std::string& where) {
  if (policy == kCorePolicyDefault || policy == kCorePolicyForce || policy == kCorePolicyDisable) {
    return Status::Ok();
  }
  return InvalidArgument(where + ": gpuCorePolicy \"" + policy +
                         "\" is not one of default, force, disable");
}

}  // namespace

Result<NvidiaConfig> ParseDeviceConfigYaml(std::string_view yaml) {
  NvidiaConfig c;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("device-config.yaml is not valid YAML: ") + e.what());
  }
  if (!root.IsDefined() || root.IsNull()) return c;
  if (!root.IsMap()) return InvalidArgument("device-config.yaml: top level must be a mapping");
  YAML::Node n = root["nvidia"];
  if (!n.IsDefined() || n.IsNull()) return c;
  if (!n.IsMap()) return InvalidArgument("device-config.yaml: nvidia: must be a mapping");
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "resourceCountName", "a string", c.resource_count_name));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "resourceMemoryName", "a string", c.resource_memory_name));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "resourceCoreName", "a string", c.resource_core_name));
  VGPU_RETURN_IF_ERROR(
      ReadYaml(n, "resourceMemoryPercentageName", "a string", c.resource_memory_percentage_name));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "resourcePriorityName", "a string", c.resource_priority_name));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "defaultMemory", "an integer (MiB)", c.default_memory));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "defaultCores", "an integer 0-100", c.default_cores));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "defaultGPUNum", "an integer", c.default_gpu_num));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "deviceSplitCount", "an integer", c.device_split_count));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "deviceMemoryScaling", "a number", c.device_memory_scaling));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "deviceCoreScaling", "a number", c.device_core_scaling));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "disableCoreLimit", "true or false", c.disable_core_limit));
  VGPU_RETURN_IF_ERROR(ReadYaml(n, "gpuCorePolicy", "a string", c.gpu_core_policy));
  if (YAML::Node numa = n["enableNumaTopology"]; numa.IsDefined() && !numa.IsNull()) {
    bool on = false;
    VGPU_RETURN_IF_ERROR(ReadYaml(n, "enableNumaTopology", "true or false", on));
    c.enable_numa_topology = on;
  }

  const std::string where = "device-config.yaml: nvidia";
  if (c.default_memory < 0) return InvalidArgument(where + ".defaultMemory must be >= 0");
  if (c.default_cores < 0 || c.default_cores > 100) {
    return InvalidArgument(where + ".defaultCores must be within 0-100");
  }
  if (c.default_gpu_num < 1) return InvalidArgument(where + ".defaultGPUNum must be >= 1");
  VGPU_RETURN_IF_ERROR(CheckCorePolicy(c.gpu_core_policy, where));
  return c;
}

namespace {

using nlohmann::json;

template <typename T>
Status ReadJson(const json& obj, const char* key, const std::string& where, std::optional<T>& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  bool ok = std::is_floating_point_v<T> ? it->is_number() : it->is_number_integer();
  if (!ok) {
    return InvalidArgument(where + "." + key + ": want " +
                           (std::is_floating_point_v<T> ? "a number" : "an integer") + ", got " +
                           it->dump());
  }
  out = it->get<T>();
  return Status::Ok();
}

Status ReadJsonBool(const json& obj, const char* key, const std::string& where,
                    std::optional<bool>& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_boolean()) {
    return InvalidArgument(where + "." + key + ": want true or false, got " + it->dump());
  }
  out = it->get<bool>();
  return Status::Ok();
}

Status ReadJsonString(const json& obj, const char* key, const std::string& where,
                      std::optional<std::string>& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) {
    return InvalidArgument(where + "." + key + ": want a string, got " + it->dump());
  }
  out = it->get<std::string>();
  return Status::Ok();
}

}  // namespace

Result<std::vector<NodeOverride>> ParseNodeConfigJson(std::string_view json_text) {
  Result<json> parsed = codec::ParseJsonWithin(json_text, codec::kNodeFileJson, "config.json");
  if (!parsed.ok()) return parsed.status();
  const json& doc = *parsed;
  if (!doc.is_object()) return InvalidArgument("config.json: top level must be an object");
  std::vector<NodeOverride> out;
  auto list = doc.find("nodeconfig");
  if (list == doc.end() || list->is_null()) return out;
  if (!list->is_array()) return InvalidArgument("config.json: nodeconfig: want a list");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    std::string where = "config.json: nodeconfig[" + std::to_string(i) + "]";
    if (!e.is_object()) return InvalidArgument(where + ": want an object");
    NodeOverride o;
    auto name = e.find("name");
    if (name == e.end() || !name->is_string() || name->get<std::string>().empty()) {
      return InvalidArgument(where + ".name: want the node name (a non-empty string)");
    }
    o.name = name->get<std::string>();
    where = "config.json: nodeconfig \"" + o.name + "\"";
    VGPU_RETURN_IF_ERROR(ReadJson(e, "devicesplitcount", where, o.device_split_count));
    VGPU_RETURN_IF_ERROR(ReadJson(e, "devicememoryscaling", where, o.device_memory_scaling));
    VGPU_RETURN_IF_ERROR(ReadJson(e, "devicecorescaling", where, o.device_core_scaling));
    VGPU_RETURN_IF_ERROR(ReadJsonString(e, "operatingmode", where, o.operating_mode));
    VGPU_RETURN_IF_ERROR(ReadJsonBool(e, "enablenumatopology", where, o.enable_numa_topology));
    if (auto f = e.find("filterdevices"); f != e.end() && !f->is_null()) {
      if (!f->is_object()) return InvalidArgument(where + ".filterdevices: want an object");
      if (auto u = f->find("uuid"); u != f->end() && !u->is_null()) {
        if (!u->is_array()) return InvalidArgument(where + ".filterdevices.uuid: want a list");
        for (const json& v : *u) {
          if (!v.is_string()) {
            return InvalidArgument(where + ".filterdevices.uuid: want strings, got " + v.dump());
          }
          o.filter_uuids.push_back(v.get<std::string>());
        }
      }
      if (auto x = f->find("index"); x != f->end() && !x->is_null()) {
        if (!x->is_array()) return InvalidArgument(where + ".filterdevices.index: want a list");
        for (const json& v : *x) {
          if (!v.is_number_integer()) {
            return InvalidArgument(where + ".filterdevices.index: want integers, got " + v.dump());
          }
          o.filter_indices.push_back(v.get<int32_t>());
        }
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

Result<NodeSettings> MergeNodeSettings(const NvidiaConfig& device,
                                       const std::vector<NodeOverride>& nodes,
                                       std::string_view node_name, const FlagOverrides& flags) {
  NodeSettings s;
  s.device_split_count = device.device_split_count;
  s.device_memory_scaling = device.device_memory_scaling;
  s.device_core_scaling = device.device_core_scaling;
  s.disable_core_limit = device.disable_core_limit;
  s.gpu_core_policy = device.gpu_core_policy;
  if (device.enable_numa_topology) s.numa_topology = *device.enable_numa_topology;
  std::string source = "device-config.yaml";
  for (const auto& o : nodes) {
    if (o.name != node_name) continue;
    if (o.device_split_count) s.device_split_count = *o.device_split_count;
    if (o.device_memory_scaling) s.device_memory_scaling = *o.device_memory_scaling;
    if (o.device_core_scaling) s.device_core_scaling = *o.device_core_scaling;
    s.filter_uuids = o.filter_uuids;
    s.filter_indices = o.filter_indices;
    if (o.operating_mode) s.operating_mode = *o.operating_mode;
    if (o.enable_numa_topology) s.numa_topology = *o.enable_numa_topology;
    source += " + config.json node \"" + o.name + "\"";
    break;
  }
  if (flags.device_split_count) s.device_split_count = *flags.device_split_count;
  if (flags.device_memory_scaling) s.device_memory_scaling = *flags.device_memory_scaling;
  if (flags.device_core_scaling) s.device_core_scaling = *flags.device_core_scaling;
  if (flags.disable_core_limit) s.disable_core_limit = *flags.disable_core_limit;
  if (flags.gpu_core_policy) s.gpu_core_policy = *flags.gpu_core_policy;
  if (flags.operating_mode) s.operating_mode = *flags.operating_mode;
  if (flags.numa_topology) s.numa_topology = *flags.numa_topology;
  if (flags.device_split_count || flags.device_memory_scaling || flags.device_core_scaling ||
      flags.disable_core_limit || flags.gpu_core_policy || flags.operating_mode ||
      flags.numa_topology) {
    source += " + flags";
  }
  if (s.device_split_count < 1 || s.device_split_count > 1024) {
    return InvalidArgument(source + ": device split count " + std::to_string(s.device_split_count) +
                           " must be within 1-1024");
  }
  if (!(s.device_memory_scaling > 0) || s.device_memory_scaling > 100) {
    return InvalidArgument(source + ": device memory scaling " +
                           std::to_string(s.device_memory_scaling) + " must be > 0 and <= 100");
  }
  if (!(s.device_core_scaling > 0) || s.device_core_scaling > 100) {
    return InvalidArgument(source + ": device core scaling " +
                           std::to_string(s.device_core_scaling) + " must be > 0 and <= 100");
  }
  VGPU_RETURN_IF_ERROR(CheckCorePolicy(s.gpu_core_policy, source));
  // Fail closed: a misspelt mode must not quietly run the node time-sliced while its pods were
  // promised MPS (or the reverse).
  if (s.operating_mode != kOperatingModeHamiCore && s.operating_mode != kOperatingModeMps) {
    std::string hint = s.operating_mode == annotations::kModeMig
                           ? " (vgpu does not create MIG instances; use hami-core or mps)"
                           : "";
    return InvalidArgument(source + ": operating mode \"" + s.operating_mode +
                           "\" is not one of hami-core, mps" + hint);
  }
  return s;
}

}  // namespace vgpu::config
