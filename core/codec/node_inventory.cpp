#include "core/codec/node_inventory.h"

#include <nlohmann/json.hpp>

#include "core/codec/bounded_json.h"
#include "core/codec/parse_util.h"

namespace vgpu::codec {

using codec_internal::ParseInt;
using codec_internal::Quote;
using codec_internal::Split;
using nlohmann::json;

std::string NvidiaDeviceType(std::string_view model) {
  if (model.starts_with("NVIDIA")) return std::string(model);
  return "NVIDIA-" + std::string(model);
}

std::string EncodeInventoryJson(const NodeInventory& devices) {
  json arr = json::array();
  for (const auto& d : devices) {
    arr.push_back({{"id", d.id},
                   {"index", d.index},
                   {"count", d.count},
                   {"devmem", d.devmem},
                   {"devcore", d.devcore},
                   {"type", d.type},
                   {"numa", d.numa},
                   {"mode", d.mode},
                   {"health", d.health}});
  }
  return arr.dump();
}

std::string EncodeInventoryText(const NodeInventory& devices, bool with_index_and_mode) {
  std::string out;
  for (const auto& d : devices) {
    out += d.id + "," + std::to_string(d.count) + "," + std::to_string(d.devmem) + "," +
           std::to_string(d.devcore) + "," + d.type + "," + std::to_string(d.numa) + "," +
           (d.health ? "true" : "false");
    if (with_index_and_mode) out += "," + std::to_string(d.index) + "," + d.mode;
    out += ':';
  }
  return out;
}

std::string EncodeInventory(const NodeInventory& devices, InventoryFormat format) {
  return format == InventoryFormat::kJson ? EncodeInventoryJson(devices)
                                          : EncodeInventoryText(devices);
}

namespace {

template <typename Int>
Status ReadInt(const json& obj, const char* key, size_t i, Int& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer()) {
    return InvalidArgument("inventory device " + std::to_string(i) + ": field \"" + key +
                           "\" must be an integer, got " + it->dump());
  }
  out = it->get<Int>();
  return Status::Ok();
}

Status ReadString(const json& obj, const char* key, size_t i, std::string& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) {
    return InvalidArgument("inventory device " + std::to_string(i) + ": field \"" + key +
                           "\" must be a string, got " + it->dump());
  }
  out = it->get<std::string>();
  return Status::Ok();
}

}  // namespace

Result<NodeInventory> DecodeInventoryJson(std::string_view text) {
  Result<json> parsed = ParseJsonWithin(text, kAnnotationJson, "node inventory");
  if (!parsed.ok()) {
    if (parsed.status().code() != StatusCode::kInvalidArgument) return parsed.status();
    return InvalidArgument("node inventory is not valid JSON: " + Quote(text.substr(0, 80)));
  }
  const json& doc = *parsed;
  if (!doc.is_array()) return InvalidArgument("node inventory JSON must be an array of devices");
  NodeInventory out;
  for (size_t i = 0; i < doc.size(); ++i) {
    const json& o = doc[i];
    if (!o.is_object()) {
      return InvalidArgument("inventory device " + std::to_string(i) + " is not a JSON object");
    }
    DeviceInfo d;
    VGPU_RETURN_IF_ERROR(ReadString(o, "id", i, d.id));
    VGPU_RETURN_IF_ERROR(ReadInt(o, "index", i, d.index));
    VGPU_RETURN_IF_ERROR(ReadInt(o, "count", i, d.count));
    VGPU_RETURN_IF_ERROR(ReadInt(o, "devmem", i, d.devmem));
    VGPU_RETURN_IF_ERROR(ReadInt(o, "devcore", i, d.devcore));
    VGPU_RETURN_IF_ERROR(ReadString(o, "type", i, d.type));
    VGPU_RETURN_IF_ERROR(ReadInt(o, "numa", i, d.numa));
    VGPU_RETURN_IF_ERROR(ReadString(o, "mode", i, d.mode));
    if (auto it = o.find("health"); it != o.end() && !it->is_null()) {
      if (!it->is_boolean()) {
        return InvalidArgument("inventory device " + std::to_string(i) +
                               ": field \"health\" must be true or false, got " + it->dump());
      }
      d.health = it->get<bool>();
    }
    if (d.id.empty()) {
      return InvalidArgument("inventory device " + std::to_string(i) + " has no \"id\" (GPU UUID)");
    }
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

template <typename Int>
Status TextInt(std::string_view field, const char* name, size_t i, Int& out) {
  auto v = ParseInt<Int>(field);
  if (!v) {
    return InvalidArgument("inventory device " + std::to_string(i) + ": " + name + " " +
                           Quote(field) + " is not an integer");
  }
  out = *v;
  return Status::Ok();
}

}  // namespace

Result<NodeInventory> DecodeInventoryText(std::string_view text) {
  NodeInventory out;
  if (text.empty()) return out;
  if (text.back() != ':') {
    return InvalidArgument("legacy node inventory " + Quote(text.substr(0, 80)) +
                           " does not end with ':' (every device ends with ':')");
  }
  auto devices = Split(text.substr(0, text.size() - 1), ':');
  for (size_t i = 0; i < devices.size(); ++i) {
    auto f = Split(devices[i], ',');
    if (f.size() != 7 && f.size() != 9) {
      return InvalidArgument("inventory device " + std::to_string(i) + " " + Quote(devices[i]) +
                             ": want 7 or 9 comma-separated fields "
                             "<uuid>,<count>,<devmem>,<devcore>,<type>,<numa>,<health>[,<index>,<"
                             "mode>], got " +
                             std::to_string(f.size()));
    }
    DeviceInfo d;
    d.id = std::string(f[0]);
    if (d.id.empty())
      return InvalidArgument("inventory device " + std::to_string(i) + ": empty UUID");
    VGPU_RETURN_IF_ERROR(TextInt(f[1], "count", i, d.count));
    VGPU_RETURN_IF_ERROR(TextInt(f[2], "devmem", i, d.devmem));
    VGPU_RETURN_IF_ERROR(TextInt(f[3], "devcore", i, d.devcore));
    d.type = std::string(f[4]);
    VGPU_RETURN_IF_ERROR(TextInt(f[5], "numa", i, d.numa));
    if (f[6] == "true") {
      d.health = true;
    } else if (f[6] == "false") {
      d.health = false;
    } else {
      return InvalidArgument("inventory device " + std::to_string(i) + ": health " + Quote(f[6]) +
                             " must be true or false");
    }
    if (f.size() == 9) {
      VGPU_RETURN_IF_ERROR(TextInt(f[7], "index", i, d.index));
      d.mode = std::string(f[8]);
    }
    out.push_back(std::move(d));
  }
  return out;
}

Result<NodeInventory> DecodeInventory(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '[') return DecodeInventoryJson(text);
  return DecodeInventoryText(text);
}

}  // namespace vgpu::codec
