#include "core/codec/kubelet_checkpoint.h"

#include <nlohmann/json.hpp>

#include "core/codec/base64.h"
#include "core/codec/bounded_json.h"

namespace vgpu::codec {
namespace {

std::string StringField(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// DeviceIDs: {"<numa node>": [ids]} since kubelet 1.20, a plain list before.
Status AppendDeviceIds(const nlohmann::json& ids, std::vector<std::string>& out) {
  if (ids.is_null()) {
    return Status::Ok();
  }
  auto append_list = [&out](const nlohmann::json& list) {
    if (!list.is_array()) {
      return InvalidArgument("DeviceIDs holds a " + std::string(list.type_name()) +
                             " where a list of IDs belongs");
    }
    for (const auto& id : list) {
      if (!id.is_string()) {
        return InvalidArgument("DeviceIDs holds a " + std::string(id.type_name()) +
                               " where an ID string belongs");
      }
      out.push_back(id.get<std::string>());
    }
    return Status::Ok();
  };
  if (ids.is_array()) {
    return append_list(ids);
  }
  if (!ids.is_object()) {
    return InvalidArgument("DeviceIDs is a " + std::string(ids.type_name()) +
                           ", neither a list nor a map by NUMA node");
  }
  for (const auto& [numa, list] : ids.items()) {
    Status s = append_list(list);
    if (!s.ok()) {
      return s.WithContext("NUMA node " + numa);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<KubeletDeviceEntry>> DecodeKubeletCheckpoint(std::string_view json) {
  Result<nlohmann::json> parsed = ParseJsonWithin(json, kNodeFileJson, "kubelet checkpoint");
  if (!parsed.ok() && parsed.status().code() != StatusCode::kInvalidArgument) {
    return parsed.status();
  }
  if (!parsed.ok() || !parsed->is_object()) return InvalidArgument("not a JSON object");
  const nlohmann::json& doc = *parsed;
  auto data = doc.find("Data");
  if (data == doc.end() || !data->is_object()) {
    return InvalidArgument("no \"Data\" object: not kubelet's device-manager checkpoint");
  }
  std::vector<KubeletDeviceEntry> out;
  auto entries = data->find("PodDeviceEntries");
  if (entries == data->end() || entries->is_null()) {
    return out;  // kubelet writes null when it holds no allocation
  }
  if (!entries->is_array()) {
    return InvalidArgument("\"PodDeviceEntries\" is not a list");
  }
  for (size_t i = 0; i < entries->size(); ++i) {
    const auto& e = (*entries)[i];
    const std::string where = "PodDeviceEntries[" + std::to_string(i) + "]";
    if (!e.is_object()) {
      return InvalidArgument(where + " is not an object");
    }
    KubeletDeviceEntry entry{StringField(e, "PodUID"),
                             StringField(e, "ContainerName"),
                             StringField(e, "ResourceName"),
                             {},
                             {}};
    if (entry.pod_uid.empty() || entry.resource.empty()) {
      return InvalidArgument(where + " lacks PodUID or ResourceName");
    }
    auto ids = e.find("DeviceIDs");
    if (ids != e.end()) {
      Status s = AppendDeviceIds(*ids, entry.device_ids);
      if (!s.ok()) {
        return s.WithContext(where);
      }
    }
    auto resp = Base64Decode(StringField(e, "AllocResp"));
    if (!resp.ok()) {
      return resp.status().WithContext(where + ".AllocResp");
    }
    entry.alloc_resp = std::move(*resp);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace vgpu::codec
