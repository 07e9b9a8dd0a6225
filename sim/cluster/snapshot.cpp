#include "sim/cluster/snapshot.h"

#include "core/codec/annotations.h"
#include "core/codec/node_inventory.h"
#include "core/codec/pod_devices.h"
#include "core/codec/pod_resources.h"

namespace vgpu::sim {

namespace {

using nlohmann::json;

std::string StringAt(const json& obj, const json::json_pointer& ptr) {
  if (!obj.contains(ptr)) return {};
  const json& v = obj.at(ptr);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::map<std::string, std::string> Annotations(const json& obj) {
  std::map<std::string, std::string> out;
  const json::json_pointer ptr("/metadata/annotations");
  if (!obj.contains(ptr) || !obj.at(ptr).is_object()) return out;
  for (const auto& [k, v] : obj.at(ptr).items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

// The inventory's type is the model as HAMi registers it (codec::NvidiaDeviceType); selectors
// match substrings, so keep it whole.
Result<NodeInventory> NodeFromObject(const json& node) {
  NodeInventory inv;
  inv.name = StringAt(node, json::json_pointer("/metadata/name"));
  const auto ann = Annotations(node);
  auto it = ann.find(std::string(annotations::kNodeNvidiaRegister));
  if (it == ann.end()) return inv;
  Result<codec::NodeInventory> devices = codec::DecodeInventory(it->second);
  if (!devices.ok()) return devices.status().WithContext("node " + inv.name + " inventory");
  std::set<std::string> cordoned;
  if (auto c = ann.find(std::string(annotations::kDeviceCordon)); c != ann.end()) {
    cordoned = CordonedUuids(c->second);
  }
  for (const codec::DeviceInfo& d : *devices) {
    inv.gpus.push_back(GpuInventory{d.id, d.type, d.count, d.devmem, d.devcore, d.numa, d.health,
                                    cordoned.contains(d.id)});
  }
  return inv;
}

Result<VgpuRequest> RequestFromPod(const json& pod, const RequestDefaults& defaults,
                                   const std::string& who) {
  Result<std::vector<codec::ContainerRequest>> containers = codec::ExtractPodRequests(pod);
  if (!containers.ok()) return containers.status().WithContext(who);
  VgpuRequest total;
  int asking = 0;
  for (const codec::ContainerRequest& c : *containers) {
    if (!c.AsksForGpu() || c.init) continue;
    PodSpec spec;
    if (c.count > 0) spec.gpus = c.count;
    spec.mem_mib = c.memory_mib;
    spec.mem_percent = c.memory_percentage;
    spec.cores = c.cores;
    total = EffectiveRequest(spec, defaults);
    ++asking;
  }
  // The simulated pods have one GPU container; a pod with several is checked by its vGPU total.
  if (asking > 1) {
    total.count = 0;
    for (const codec::ContainerRequest& c : *containers) {
      if (c.AsksForGpu() && !c.init) total.count += std::max(c.count, defaults.default_gpu_num);
    }
  }
  return total;
}

}  // namespace

Result<ClusterSnapshot> SnapshotFromObjects(const std::vector<json>& nodes,
                                            const std::vector<json>& pods,
                                            const RequestDefaults& defaults) {
  ClusterSnapshot snap;
  for (const json& n : nodes) {
    Result<NodeInventory> inv = NodeFromObject(n);
    if (!inv.ok()) return inv.status();
    snap.nodes.push_back(std::move(*inv));
  }
  for (const json& p : pods) {
    const std::string phase = StringAt(p, json::json_pointer("/status/phase"));
    if (phase == "Succeeded" || phase == "Failed") continue;
    PodState state;
    state.ns = StringAt(p, json::json_pointer("/metadata/namespace"));
    state.name = StringAt(p, json::json_pointer("/metadata/name"));
    state.node = StringAt(p, json::json_pointer("/spec/nodeName"));
    const std::string who = "pod " + state.ns + "/" + state.name;
    Result<VgpuRequest> req = RequestFromPod(p, defaults, who);
    if (!req.ok()) return req.status();
    state.request = *req;
    if (state.request.count == 0) continue;
    state.annotations = Annotations(p);
    auto it = state.annotations.find(std::string(annotations::kDevicesAllocated));
    if (it != state.annotations.end() && !it->second.empty()) {
      Result<codec::PodDevices> devs = codec::DecodePodDevices(it->second);
      if (!devs.ok()) return devs.status().WithContext(who + " devices-allocated");
      for (const codec::ContainerDevices& c : *devs) {
        for (const codec::ContainerDevice& d : c) {
          state.allocated.push_back(AllocatedVgpu{d.uuid, d.mem_mib, d.cores});
        }
      }
    }
    snap.pods.push_back(std::move(state));
  }
  return snap;
}

}  // namespace vgpu::sim
