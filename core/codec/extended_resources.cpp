#include "core/codec/extended_resources.h"

#include <cctype>

#include "core/base/strings.h"

namespace vgpu::codec {
namespace {

bool IsAlnum(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

// A DNS subdomain (RFC 1123), as Kubernetes checks the prefix of a qualified name.
bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (std::string_view label : Split(s, '.')) {
    if (label.empty() || label.size() > 63 || !IsAlnum(label.front()) || !IsAlnum(label.back())) {
      return false;
    }
    for (char c : label) {
      if (!(IsAlnum(c) && !std::isupper(static_cast<unsigned char>(c))) && c != '-') return false;
    }
  }
  return true;
}

// The name part of a qualified name: 1-63 of [A-Za-z0-9-_.], alphanumeric at both ends.
bool IsQualifiedNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63 || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// Kubernetes' IsExtendedResourceName: "<domain>/<name>" outside kubernetes.io, not requests.*,
// and "requests.<it>" a qualified name (so quotas can name it). Empty when fine, else why not.
std::string WhyNotExtended(std::string_view name) {
  const size_t slash = name.find('/');
  if (slash == std::string_view::npos || name.find('/', slash + 1) != std::string_view::npos) {
    return "an extended resource name is <domain>/<name>, with one '/'";
  }
  if (name.find("kubernetes.io/") != std::string_view::npos) {
    return "names in the kubernetes.io domain are Kubernetes' own";
  }
  if (name.starts_with("requests.")) return "names starting with requests. are quota names";
  const std::string_view domain = name.substr(0, slash);
  if (!IsDnsSubdomain(domain) || ("requests." + std::string(domain)).size() > 253) {
    return "the domain must be a lowercase DNS subdomain (a-z, 0-9, '-', '.')";
  }
  if (!IsQualifiedNamePart(name.substr(slash + 1))) {
    return "the part after '/' must be 1-63 of A-Z, a-z, 0-9, '-', '_', '.', alphanumeric at "
           "both ends";
  }
  return "";
}

}  // namespace

Status CheckExtendedResourceNames(const ResourceNames& names) {
  for (const auto& [what, name] :
       {std::pair<std::string_view, const std::string&>{"memory", names.memory},
        std::pair<std::string_view, const std::string&>{"cores", names.cores}}) {
    if (std::string why = WhyNotExtended(name); !why.empty()) {
      std::string message = "cannot advertise the " + std::string(what) + " resource \"";
      message += name;
      message += "\" as a node extended resource: ";
      message += why;
      message += " (resourceMemoryName / resourceCoreName in device-config.yaml)";
      return InvalidArgument(message);
    }
    if (name == names.count) {
      return InvalidArgument(
          "cannot advertise the " + std::string(what) + " resource \"" + name +
          "\": it is also the count resource (--resource-name), which kubelet's device manager "
          "owns; give memory and cores names of their own in device-config.yaml");
    }
  }
  if (names.memory == names.cores) {
    return InvalidArgument("cannot advertise memory and cores under one name \"" + names.memory +
                           "\": set different resourceMemoryName and resourceCoreName in "
                           "device-config.yaml");
  }
  return Status::Ok();
}

ExtendedCapacity ExtendedResourceCapacity(const NodeInventory& inventory,
                                          const ResourceNames& names) {
  int64_t memory = 0;
  int64_t cores = 0;
  for (const DeviceInfo& d : inventory) {
    if (!d.health) continue;
    // Negative figures cannot come from our own inventory; never let one shrink the sum.
    if (d.devmem > 0) memory += d.devmem;
    if (d.devcore > 0) cores += d.devcore;
  }
  return {{names.memory, memory}, {names.cores, cores}};
}

nlohmann::json ExtendedResourceStatusPatch(const ExtendedCapacity& advertise,
                                           const std::set<std::string>& withdraw) {
  nlohmann::json capacity = nlohmann::json::object();
  nlohmann::json allocatable = nlohmann::json::object();
  for (const std::string& name : withdraw) {
    if (advertise.contains(name)) continue;  // in both lists: advertised
    capacity[name] = nullptr;
    allocatable[name] = nullptr;
  }
  // Quantities as strings, as the API serves them.
  for (const auto& [name, value] : advertise) capacity[name] = std::to_string(value);
  nlohmann::json status = {{"capacity", capacity}};
  if (!allocatable.empty()) status["allocatable"] = allocatable;
  return {{"status", status}};
}

std::string EncodeAdvertisedNames(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ',';
    out += n;
  }
  return out;
}

std::set<std::string> DecodeAdvertisedNames(std::string_view value) {
  std::set<std::string> out;
  for (std::string_view part : Split(value, ',')) {
    part = TrimSpace(part);
    if (!part.empty()) out.emplace(part);
  }
  return out;
}

}  // namespace vgpu::codec
