#include "core/codec/pod_resources.h"

#include <nlohmann/json.hpp>

#include "core/codec/parse_util.h"
#include "core/codec/quantity.h"

namespace vgpu::codec {

using nlohmann::json;

namespace {

// The quantity text of `name` from limits, else requests, or nullopt. Numbers are accepted too
// because some clients write integers instead of quantity strings.
Result<std::optional<std::string>> Lookup(const json& container, const std::string& name) {
  const json* resources = nullptr;
  if (auto it = container.find("resources"); it != container.end() && it->is_object()) {
    resources = &*it;
  }
  if (!resources) return std::optional<std::string>();
  for (const char* section : {"limits", "requests"}) {
    auto s = resources->find(section);
    if (s == resources->end() || !s->is_object()) continue;
    auto v = s->find(name);
    if (v == s->end()) continue;
    if (v->is_string()) return std::optional<std::string>(v->get<std::string>());
    if (v->is_number_integer())
      return std::optional<std::string>(std::to_string(v->get<int64_t>()));
    return InvalidArgument(std::string(section) + "." + name + " must be a quantity string, got " +
                           v->dump());
  }
  return std::optional<std::string>();
}

Result<std::optional<int64_t>> LookupInt(const json& c, const std::string& name, bool memory) {
  auto text = Lookup(c, name);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::optional<int64_t>();
  auto v = memory ? ParseMemoryMiB(**text) : ParseQuantity(**text);
  if (!v.ok()) return v.status().WithContext(name);
  return std::optional<int64_t>(*v);
}

Status ReadContainer(const json& c, bool init, const ResourceNames& names, ContainerRequest& out) {
  out.init = init;
  if (auto n = c.find("name"); n != c.end() && n->is_string()) out.name = n->get<std::string>();
  auto count = LookupInt(c, names.count, false);
  if (!count.ok()) return count.status();
  if (*count) {
    if (**count > 1024)
      return InvalidArgument(names.count + ": " + std::to_string(**count) +
                             " GPUs is more than any node has");
    out.count = static_cast<int32_t>(**count);
  }
  auto mem = LookupInt(c, names.memory, true);
  if (!mem.ok()) return mem.status();
  out.memory_mib = *mem;
  auto pct_limit = [&](const std::string& name, std::optional<int32_t>& field,
                       int64_t max) -> Status {
    auto v = LookupInt(c, name, false);
    if (!v.ok()) return v.status();
    if (*v) {
      if (**v > max) {
        return InvalidArgument(name + ": " + std::to_string(**v) + " is above the maximum " +
                               std::to_string(max));
      }
      field = static_cast<int32_t>(**v);
    }
    return Status::Ok();
  };
  VGPU_RETURN_IF_ERROR(pct_limit(names.memory_percentage, out.memory_percentage, 100));
  VGPU_RETURN_IF_ERROR(pct_limit(names.cores, out.cores, 100));
  VGPU_RETURN_IF_ERROR(pct_limit(names.priority, out.priority, 1));
  return Status::Ok();
}

}  // namespace

Result<std::vector<ContainerRequest>> ExtractPodRequests(const json& pod,
                                                         const ResourceNames& names) {
  std::vector<ContainerRequest> out;
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return InvalidArgument("pod has no spec");
  for (auto [key, init] : {std::pair{"initContainers", true}, std::pair{"containers", false}}) {
    auto list = spec->find(key);
    if (list == spec->end() || list->is_null()) continue;
    if (!list->is_array()) return InvalidArgument(std::string("spec.") + key + " is not a list");
    for (const json& c : *list) {
      ContainerRequest req;
      if (!c.is_object())
        return InvalidArgument(std::string("spec.") + key + " has a non-object entry");
      Status s = ReadContainer(c, init, names, req);
      if (!s.ok()) return s.WithContext("container " + codec_internal::Quote(req.name));
      out.push_back(std::move(req));
    }
  }
  return out;
}

}  // namespace vgpu::codec
