#include "core/sched/pod_request.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/base/strings.h"
#include "core/codec/annotations.h"
#include "core/sched/policy.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    std::string item(TrimSpace(std::string_view(s).substr(start, comma - start)));
    if (!item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
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

}  // namespace

bool PodRequest::wants_gpu() const {
  auto any = [](const std::vector<ContainerRequest>& v) {
    return std::any_of(v.begin(), v.end(), [](const ContainerRequest& c) { return c.wants_gpu(); });
  };
  return any(init_containers) || any(app_containers);
}

ContainerRequest ApplyDefaults(const codec::ContainerRequest& ask,
                               const RequestDefaults& defaults) {
  ContainerRequest r;
  if (!ask.AsksForGpu()) return {};
  // An explicit count decides (0 asked for no GPU above); only memory or cores asked: HAMi's
  // defaultGPUNum.
  r.count = ask.count_given ? ask.count : defaults.gpu_num;
  if (r.count <= 0) return {};
  // A memory or percentage of 0 reads as unset, as HAMi reads them (HAMi #2156): the default
  // applies. Never 0 MiB: libvgpu.so (HAMi-core) reads a 0 limit as "unlimited".
  if (ask.memory_mib && *ask.memory_mib > 0) {
    r.mem_mib = *ask.memory_mib;
  } else if (ask.memory_percentage && *ask.memory_percentage > 0) {
    r.mem_percent = *ask.memory_percentage;
  } else if (defaults.mem_mib > 0) {
    r.mem_mib = defaults.mem_mib;
  } else {
    r.mem_percent = 100;
  }
  r.cores = ask.cores ? *ask.cores : defaults.cores;
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
  Result<std::vector<codec::ContainerRequest>> asks = codec::ExtractPodRequests(pod, names);
  if (!asks.ok()) return asks.status();
  for (const codec::ContainerRequest& ask : *asks) {
    (ask.init ? req.init_containers : req.app_containers).push_back(ApplyDefaults(ask, defaults));
  }

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
    const std::string b = Lower(TrimSpace(*v));
    if (b == "true" || b == "1" || b == "t") {
      req.numa_bind = true;
    } else if (!(b.empty() || b == "false" || b == "0" || b == "f")) {
      return InvalidArgument(std::string("pod annotation ") + kAnnoNumaBind + " is \"" + *v +
                             "\", want true or false");
    }
  }
  {
    // HAMi matches the value by substring; here each comma-separated word must be a mode, so that
    // a typo keeps the pod Pending with this message instead of matching nothing or anything.
    Result<std::string> v = get(kAnnoVgpuMode);
    if (!v.ok()) return v.status();
    for (std::string& m : SplitList(*v)) {
      if (m != annotations::kModeHamiCore && m != annotations::kModeMig &&
          m != annotations::kModeMps) {
        return InvalidArgument(std::string("pod annotation ") + kAnnoVgpuMode + " names mode \"" +
                               m + "\", want a comma list of hami-core, mig, mps");
      }
      req.modes.insert(std::move(m));
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
