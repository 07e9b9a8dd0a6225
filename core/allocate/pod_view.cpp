#include "core/allocate/pod_view.h"

#include <nlohmann/json.hpp>

namespace vgpu::allocate {
namespace {

std::string StringAt(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

void AppendContainers(const nlohmann::json& spec, const char* key, bool init, PodView& out) {
  auto list = spec.find(key);
  if (list == spec.end() || !list->is_array()) {
    return;
  }
  for (const auto& c : *list) {
    if (!c.is_object()) {
      continue;
    }
    ContainerView view{StringAt(c, "name"), init, {}, {}};
    if (auto env = c.find("env"); env != c.end() && env->is_array()) {
      for (const auto& e : *env) {
        if (!e.is_object()) {
          continue;
        }
        auto value = e.find("value");
        if (value != e.end() && value->is_string()) {
          view.env[StringAt(e, "name")] = *value;
        }
      }
    }
    out.containers.push_back(std::move(view));
  }
}

}  // namespace

Result<PodView> PodViewFromJson(const nlohmann::json& pod, const codec::ResourceNames& names) {
  if (!pod.is_object()) {
    return InvalidArgument("pod object is not a JSON object");
  }
  auto meta = pod.find("metadata");
  if (meta == pod.end() || !meta->is_object()) {
    return InvalidArgument("pod has no metadata");
  }
  PodView view;
  view.ns = StringAt(*meta, "namespace");
  view.name = StringAt(*meta, "name");
  view.uid = StringAt(*meta, "uid");
  if (view.name.empty() || view.ns.empty()) {
    return InvalidArgument("pod metadata lacks name or namespace");
  }
  if (auto ann = meta->find("annotations"); ann != meta->end() && ann->is_object()) {
    for (const auto& [k, v] : ann->items()) {
      if (v.is_string()) {
        view.annotations[k] = v.get<std::string>();
      }
    }
  }
  if (auto status = pod.find("status"); status != pod.end() && status->is_object()) {
    view.phase = StringAt(*status, "phase");
  }
  if (auto spec = pod.find("spec"); spec != pod.end() && spec->is_object()) {
    view.node_name = StringAt(*spec, "nodeName");
    AppendContainers(*spec, "initContainers", true, view);
    AppendContainers(*spec, "containers", false, view);
    auto asks = codec::ExtractPodRequests(pod, names);
    if (!asks.ok()) {
      view.resources_error = asks.status().message();
    } else if (asks->size() != view.containers.size()) {
      view.resources_error = "the spec lists a container that is not an object";
    } else {
      for (size_t i = 0; i < asks->size(); ++i) view.containers[i].ask = std::move((*asks)[i]);
    }
  }
  return view;
}

}  // namespace vgpu::allocate
