#pragma once

// The few facts about a pod that Allocate decisions need, extracted from the pod's JSON.
// Keeping decisions on this small struct (instead of raw JSON) keeps them table-testable.

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/codec/pod_resources.h"

namespace vgpu::allocate {

struct ContainerView {
  std::string name;
  bool init = false;
  // Literal env values from the spec (valueFrom entries are not resolvable here and are skipped).
  std::map<std::string, std::string> env;
  // The vGPU resources its spec asks for (the spec's resources cannot change after creation:
  // what Allocate hands the container is checked against them, core/allocate/spec_check.h).
  codec::ContainerRequest ask{};
};

struct PodView {
  std::string ns;
  std::string name;
  std::string uid;
  std::string phase;
  std::string node_name;  // spec.nodeName
  std::map<std::string, std::string> annotations;
  // Init containers first, then app containers, in spec order: the order of the device list
  // entries.
  std::vector<ContainerView> containers;
  // Why the containers' vGPU resources could not be read ("" when they were): such a pod gets no
  // Allocate answer.
  std::string resources_error;
};

// Extracts a PodView from a core/v1 Pod object, the containers' asks under `names`. Fails when
// metadata.name/namespace are missing.
Result<PodView> PodViewFromJson(const nlohmann::json& pod, const codec::ResourceNames& names = {});

// "<namespace>/<name>" for messages.
inline std::string PodRef(const PodView& p) {
  return p.ns + "/" + p.name;
}

}  // namespace vgpu::allocate
