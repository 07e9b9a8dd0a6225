#include "core/sched/cluster_objects.h"

#include <algorithm>
#include <climits>
#include <nlohmann/json.hpp>

#include "core/codec/annotations.h"
#include "core/codec/node_inventory.h"
#include "core/codec/pair_scores.h"
#include "core/codec/pod_devices.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;
namespace anno = vgpu::annotations;

std::string Str(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Member(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

Result<PairScores> ParsePairScores(std::string_view text) {
  Result<codec::DevicePairScores> decoded = codec::DecodePairScores(text);
  if (!decoded.ok()) return decoded.status();
  PairScores out;
  for (const codec::DevicePairScore& d : *decoded) {
    if (d.uuid.empty()) continue;  // Go's decoder accepts such entries; nothing to key them by
    for (const auto& [peer, v] : d.scores) {
      out[d.uuid][peer] = static_cast<int>(std::clamp<int64_t>(v, INT_MIN, INT_MAX));
    }
  }
  return out;
}

std::optional<std::string> ObjectAnnotation(const json& obj, std::string_view key) {
  const json& annos = Member(Member(obj, "metadata"), "annotations");
  if (!annos.is_object()) return std::nullopt;
  auto it = annos.find(std::string(key));
  if (it == annos.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

NodeState ReadNode(const json& node) {
  NodeState s;
  const json& meta = Member(node, "metadata");
  s.name = Str(meta, "name");
  s.resource_version = Str(meta, "resourceVersion");
  s.view.name = s.name;
  if (auto inv = ObjectAnnotation(node, anno::kNodeNvidiaRegister)) {
    Result<codec::NodeInventory> devices = codec::DecodeInventory(*inv);
    if (devices.ok()) {
      for (const codec::DeviceInfo& d : *devices) {
        GpuDevice g;
        g.uuid = d.id;
        g.index = d.index;
        g.slots = d.count;
        g.mem_mib = d.devmem;
        g.cores = d.devcore;
        g.type = d.type;
        g.numa = d.numa;
        g.mode = d.mode.empty() ? "hami-core" : d.mode;
        g.healthy = d.health;
        s.view.gpus.push_back(std::move(g));
      }
    } else {
      s.inventory_error = "NodeUnregistered: annotation " + std::string(anno::kNodeNvidiaRegister) +
                          " is unreadable: " + devices.status().message();
    }
  } else {
    s.inventory_error =
        "NodeUnregistered: no vGPU device plugin has registered GPUs here "
        "(annotation " +
        std::string(anno::kNodeNvidiaRegister) + " is missing)";
  }
  if (auto cordon = ObjectAnnotation(node, anno::kDeviceCordon)) {
    std::string_view rest = *cordon;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string item = Trim(rest.substr(0, comma));
      if (!item.empty()) s.view.cordoned.insert(std::move(item));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  if (auto scores = ObjectAnnotation(node, anno::kNodeNvidiaScore)) {
    Result<PairScores> p = ParsePairScores(*scores);
    if (p.ok()) s.view.pair_scores = std::move(*p);
  }
  if (auto hs = ObjectAnnotation(node, anno::kNodeHandshake)) {
    Result<codec::Handshake> h = codec::DecodeHandshake(*hs);
    if (h.ok()) s.handshake = *h;
  }
  s.lock_value = ObjectAnnotation(node, anno::kNodeLock);
  return s;
}

bool NodeAlive(const NodeState& node, std::chrono::system_clock::time_point now,
               std::chrono::seconds timeout) {
  if (!node.handshake) return true;
  switch (node.handshake->state) {
    case codec::HandshakeState::kReported:
      return true;
    case codec::HandshakeState::kDeleted:
      return false;
    case codec::HandshakeState::kRequesting:
      return now - node.handshake->time <= timeout;
  }
  return true;
}

bool PodState::HoldsDevices() const {
  if (terminal || !allocation || node.empty()) return false;
  return true;
}

PodState ReadPod(const json& pod) {
  PodState s;
  const json& meta = Member(pod, "metadata");
  s.uid = Str(meta, "uid");
  s.ns = Str(meta, "namespace");
  s.name = Str(meta, "name");
  const json& spec = Member(pod, "spec");
  s.node = Str(spec, "nodeName");
  s.bind_phase = ObjectAnnotation(pod, anno::kBindPhase).value_or("");
  if (s.node.empty() && s.bind_phase != anno::kBindPhaseFailed) {
    s.node = ObjectAnnotation(pod, anno::kVgpuNode).value_or("");
  }
  const std::string phase = Str(Member(pod, "status"), "phase");
  s.terminal = phase == "Succeeded" || phase == "Failed";
  s.deleting = Member(meta, "deletionTimestamp").is_string();
  if (const json& pr = Member(spec, "priority"); pr.is_number_integer()) {
    s.priority = pr.get<int32_t>();
  }
  s.start_time = Str(Member(pod, "status"), "startTime");
  s.nominated_node = Str(Member(pod, "status"), "nominatedNodeName");
  if (s.start_time.empty()) s.start_time = Str(meta, "creationTimestamp");
  if (const json& labels = Member(meta, "labels"); labels.is_object()) {
    for (auto it = labels.begin(); it != labels.end(); ++it) {
      if (it->is_string()) s.labels.emplace(it.key(), it->get<std::string>());
    }
  }
  if (auto devs = ObjectAnnotation(pod, anno::kDevicesAllocated)) {
    Result<codec::PodDevices> decoded = codec::DecodePodDevices(*devs);
    if (decoded.ok()) {
      PodAllocation a;
      const json& inits = Member(spec, "initContainers");
      a.init_count = inits.is_array() ? inits.size() : 0;
      for (const codec::ContainerDevices& c : *decoded) {
        std::vector<AllocatedDevice> entry;
        for (const codec::ContainerDevice& d : c) entry.push_back({d.uuid, d.mem_mib, d.cores});
        a.containers.push_back(std::move(entry));
      }
      s.allocation = std::move(a);
    } else {
      s.allocation_error =
          std::string(anno::kDevicesAllocated) + " is unreadable: " + decoded.status().message();
    }
  }
  return s;
}

std::string EncodeAllocation(const PodAllocation& alloc) {
  codec::PodDevices pod;
  for (const auto& c : alloc.containers) {
    codec::ContainerDevices entry;
    for (const AllocatedDevice& d : c) {
      entry.push_back({d.uuid, std::string(anno::kVendorNvidia), d.mem_mib, d.cores});
    }
    pod.push_back(std::move(entry));
  }
  return codec::EncodePodDevices(pod);
}

}  // namespace vgpu::sched
