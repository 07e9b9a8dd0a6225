#include "core/sched/pod_request.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/sched/policy.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item = Trim(s.substr(start, comma - start));
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

// Quantity from a JSON value: Kubernetes sends strings, hand-written objects may carry numbers.
Result<int64_t> QuantityOf(const json& v) {
  if (v.is_string()) return ParseWholeQuantity(v.get<std::string>());
  if (v.is_number_integer() || v.is_number_unsigned()) {
    const int64_t n = v.get<int64_t>();
    if (n < 0) return InvalidArgument("quantity " + v.dump() + " is negative");
    return n;
  }
  return InvalidArgument("quantity " + v.dump() + " is not a string or whole number");
}

Status ReadResource(const json& resources, const std::string& name, int64_t& out) {
  for (const char* section : {"limits", "requests"}) {
    auto it = resources.find(section);
    if (it == resources.end() || !it->is_object()) continue;
    auto r = it->find(name);
    if (r == it->end()) continue;
    Result<int64_t> q = QuantityOf(*r);
    if (!q.ok()) return q.status().WithContext(std::string(section) + "." + name);
    out = *q;
    return Status::Ok();
  }
  return Status::Ok();
}

const json* Annotations(const json& pod) {
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) return nullptr;
  auto a = meta->find("annotations");
  if (a == meta->end() || !a->is_object()) return nullptr;
  return &*a;
}

Result<std::string> AnnotationString(const json* annos, const char* key) {
  if (annos == nullptr) return std::string();
  auto it = annos->find(key);
  if (it == annos->end() || it->is_null()) return std::string();
  if (!it->is_string())
    return InvalidArgument("annotation " + std::string(key) + " is not a string");
  return it->get<std::string>();
}

Status ReadContainers(const json& spec, const char* field, const ResourceNames& names,
                      const RequestDefaults& defaults, std::vector<ContainerRequest>& out) {
  auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return InvalidArgument(std::string("spec.") + field + " is not a list");
  for (const json& c : *it) {
    Result<RawContainerAsk> ask = ReadContainerAsk(c, names);
    if (!ask.ok()) return ask.status();
    out.push_back(ApplyDefaults(*ask, defaults));
  }
  return Status::Ok();
}

}  // namespace

bool PodRequest::wants_gpu() const {
  auto any = [](const std::vector<ContainerRequest>& v) {
    return std::any_of(v.begin(), v.end(), [](const ContainerRequest& c) { return c.wants_gpu(); });
  };
  return any(init_containers) || any(app_containers);
}

Result<RawContainerAsk> ReadContainerAsk(const json& container, const ResourceNames& names) {
  RawContainerAsk ask;
  if (!container.is_object()) return InvalidArgument("container is not an object");
  std::string cname = "?";
  if (auto n = container.find("name"); n != container.end() && n->is_string()) cname = *n;
  auto res = container.find("resources");
  if (res == container.end() || res->is_null()) return ask;
  if (!res->is_object())
    return InvalidArgument("container " + cname + ": resources is not an object");
  const std::pair<const std::string*, int64_t*> fields[] = {{&names.count, &ask.count},
                                                            {&names.mem, &ask.mem_mib},
                                                            {&names.mem_percent, &ask.mem_percent},
                                                            {&names.cores, &ask.cores},
                                                            {&names.priority, &ask.priority}};
  for (auto [name, out] : fields) {
    Status s = ReadResource(*res, *name, *out);
    if (!s.ok()) return s.WithContext("container " + cname);
  }
  if (ask.mem_percent > 100) {
    return InvalidArgument("container " + cname + ": " + names.mem_percent + " is " +
                           std::to_string(ask.mem_percent) + ", must be 0..100");
  }
  if (ask.cores > 100) {
    return InvalidArgument("container " + cname + ": " + names.cores + " is " +
                           std::to_string(ask.cores) + ", must be 0..100");
  }
  if (ask.count > 1024) {
    return InvalidArgument("container " + cname + ": " + names.count + " is " +
                           std::to_string(ask.count) + ", more GPUs than any node has");
  }
  if (ask.priority > 1) {
    return InvalidArgument("container " + cname + ": " + names.priority + " must be 0 or 1");
  }
  return ask;
}

ContainerRequest ApplyDefaults(const RawContainerAsk& ask, const RequestDefaults& defaults) {
  ContainerRequest r;
  if (ask.count > 0) {
    r.count = static_cast<int>(ask.count);
  } else if (ask.count < 0 && (ask.mem_mib >= 0 || ask.mem_percent >= 0 || ask.cores >= 0)) {
    r.count = defaults.gpu_num;
  }
  if (r.count == 0) return {};
  if (ask.mem_mib > 0) {
    r.mem_mib = ask.mem_mib;
  } else if (ask.mem_percent >= 0) {
    r.mem_percent = static_cast<int>(ask.mem_percent);
  } else if (defaults.mem_mib > 0) {
    r.mem_mib = defaults.mem_mib;
  } else {
    r.mem_percent = 100;
  }
  r.cores = ask.cores >= 0 ? static_cast<int>(ask.cores) : defaults.cores;
  return r;
}

Result<PodRequest> ParsePodRequest(const json& pod, const ResourceNames& names,
                                   const RequestDefaults& defaults) {
  if (!pod.is_object()) return InvalidArgument("pod is not a JSON object");
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object()) return InvalidArgument("pod has no spec");
  PodRequest req;
  req.node_policy = defaults.node_policy;
  req.gpu_policy = defaults.gpu_policy;
  VGPU_RETURN_IF_ERROR(
      ReadContainers(*spec, "initContainers", names, defaults, req.init_containers));
  VGPU_RETURN_IF_ERROR(ReadContainers(*spec, "containers", names, defaults, req.app_containers));

  const json* annos = Annotations(pod);
  const auto get = [&](const char* key) { return AnnotationString(annos, key); };
  const auto with_key = [](const Status& s, const char* key) {
    return s.WithContext(std::string("pod annotation ") + key);
  };

  for (auto [key, out] : {std::pair{kAnnoUseGpuType, &req.use_types},
                          std::pair{kAnnoNoUseGpuType, &req.nouse_types}}) {
    Result<std::string> v = get(key);
    if (!v.ok()) return v.status();
    for (std::string& t : SplitList(*v)) out->push_back(Lower(std::move(t)));
  }
  for (auto [key, out] : {std::pair{kAnnoUseGpuUuid, &req.use_uuids},
                          std::pair{kAnnoNoUseGpuUuid, &req.nouse_uuids}}) {
    Result<std::string> v = get(key);
    if (!v.ok()) return v.status();
    for (std::string& u : SplitList(*v)) out->insert(std::move(u));
  }
  {
    Result<std::string> v = get(kAnnoNumaBind);
    if (!v.ok()) return v.status();
    const std::string b = Lower(Trim(*v));
    if (b == "true" || b == "1" || b == "t") {
      req.numa_bind = true;
    } else if (!(b.empty() || b == "false" || b == "0" || b == "f")) {
      return InvalidArgument(std::string("pod annotation ") + kAnnoNumaBind + " is \"" + *v +
                             "\", want true or false");
    }
  }
  {
    Result<std::string> v = get(kAnnoNodePolicy);
    if (!v.ok()) return v.status();
    if (!v->empty()) {
      Result<NodePolicy> p = ParseNodePolicy(*v);
      if (!p.ok()) return with_key(p.status(), kAnnoNodePolicy);
      req.node_policy = *p;
    }
  }
  {
    Result<std::string> v = get(kAnnoGpuPolicy);
    if (!v.ok()) return v.status();
    if (!v->empty()) {
      Result<GpuPolicy> p = ParseGpuPolicy(*v);
      if (!p.ok()) return with_key(p.status(), kAnnoGpuPolicy);
      req.gpu_policy = *p;
    }
  }
  {
    Result<std::string> v = get(kAnnoScoringWeights);
    if (!v.ok()) return v.status();
    if (!v->empty()) {
      Result<ScoringWeights> w = ParseScoringWeights(*v);
      if (!w.ok()) return with_key(w.status(), kAnnoScoringWeights);
      req.weights = *w;
    }
  }
  return req;
}

}  // namespace vgpu::sched
