#include "core/codec/pod_resources.h"

#include <nlohmann/json.hpp>

#include "core/codec/parse_util.h"
#include "core/codec/quantity.h"

namespace vgpu::codec {

using codec_internal::Quote;
using nlohmann::json;

namespace {

// The quantity text of `name` in one section (`limits` or `requests`), or nullopt. Numbers are
// accepted too because some clients write integers instead of quantity strings.
Result<std::optional<std::string>> SectionText(const json& resources, const char* section,
                                               const std::string& name) {
  auto s = resources.find(section);
  if (s == resources.end() || !s->is_object()) return std::optional<std::string>();
  auto v = s->find(name);
  if (v == s->end()) return std::optional<std::string>();
  if (v->is_string()) return std::optional<std::string>(v->get<std::string>());
  if (v->is_number_unsigned())  // before is_number_integer: 2^64-1 is no negative number
    return std::optional<std::string>(std::to_string(v->get<uint64_t>()));
  if (v->is_number_integer()) return std::optional<std::string>(std::to_string(v->get<int64_t>()));
  return InvalidArgument(std::string(section) + "." + name + " must be a quantity string, got " +
                         v->dump());
}

Result<int64_t> ParseValue(const std::string& text, bool memory) {
  return memory ? ParseMemoryMiB(text, Fraction::kRefuse) : ParseQuantity(text, Fraction::kRefuse);
}

// The whole-number value of `name` from limits, else requests, or nullopt. Both given: they must
// agree (the API server refuses a pod where they differ, but the webhook sees the pod first, and
// the scheduler may see one that skipped validation).
Result<std::optional<int64_t>> LookupInt(const json& c, const std::string& name, bool memory) {
  auto resources = c.find("resources");
  if (resources == c.end() || !resources->is_object()) return std::optional<int64_t>();
  std::optional<int64_t> found[2];
  std::string texts[2];
  const char* sections[2] = {"limits", "requests"};
  for (int i = 0; i < 2; ++i) {
    auto text = SectionText(*resources, sections[i], name);
    if (!text.ok()) return text.status();
    if (!text->has_value()) continue;
    auto v = ParseValue(**text, memory);
    if (!v.ok()) return v.status().WithContext(std::string(sections[i]) + "." + name);
    found[i] = *v;
    texts[i] = **text;
  }
  if (found[0] && found[1] && *found[0] != *found[1]) {
    return InvalidArgument("limits." + name + " " + Quote(texts[0]) + " and requests." + name +
                           " " + Quote(texts[1]) +
                           " differ; Kubernetes requires them equal for extended resources: give "
                           "the same value, or limits only");
  }
  return found[0] ? found[0] : found[1];
}

Status ReadContainer(const json& c, bool init, const ResourceNames& names, ContainerRequest& out) {
  out.init = init;
  if (auto n = c.find("name"); n != c.end() && n->is_string()) out.name = n->get<std::string>();
  auto count = LookupInt(c, names.count, false);
  if (!count.ok()) return count.status();
  if (*count) {
    if (**count > kMaxGpuCount)
      return InvalidArgument(names.count + ": " + std::to_string(**count) +
                             " GPUs is more than any node has (at most " +
                             std::to_string(kMaxGpuCount) + ")");
    out.count = static_cast<int32_t>(**count);
    out.count_given = true;
  }
  auto mem = LookupInt(c, names.memory, true);
  if (!mem.ok()) return mem.status();
  if (*mem && **mem > kMaxMemoryMiB) {
    return InvalidArgument(names.memory + ": " + std::to_string(**mem) +
                           " MiB is more than any GPU has (at most " +
                           std::to_string(kMaxMemoryMiB) + ")");
  }
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
