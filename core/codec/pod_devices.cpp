#include "core/codec/pod_devices.h"

#include <cstdint>

#include "core/base/whole_number.h"
#include "core/codec/parse_util.h"

namespace vgpu::codec {

using codec_internal::Quote;
using codec_internal::Split;

std::string EncodePodDevices(const PodDevices& pod) {
  std::string out;
  for (const auto& entry : pod) {
    for (const auto& d : entry) {
      out += d.uuid;
      out += ',';
      out += d.vendor;
      out += ',';
      out += std::to_string(d.mem_mib);
      out += ',';
      out += std::to_string(d.cores);
      out += ':';
    }
    out += ';';
  }
  return out;
}

namespace {

Result<ContainerDevice> DecodeDevice(std::string_view text, size_t entry, size_t index) {
  auto where = [&] {
    return "container entry " + std::to_string(entry) + ", device " + std::to_string(index) + " " +
           Quote(text);
  };
  auto fields = Split(text, ',');
  if (fields.size() != 4) {
    return InvalidArgument(where() + ": want 4 fields <uuid>,<vendor>,<memMiB>,<cores>, got " +
                           std::to_string(fields.size()));
  }
  ContainerDevice d;
  d.uuid = std::string(fields[0]);
  d.vendor = std::string(fields[1]);
  if (d.uuid.empty()) return InvalidArgument(where() + ": empty device UUID");
  if (d.vendor.empty()) return InvalidArgument(where() + ": empty vendor");
  const Result<int64_t> mem = ParseWholeNumber(fields[2], 0, INT64_MAX);
  if (!mem.ok()) return InvalidArgument(where() + ": memory (MiB) " + mem.status().message());
  const Result<int64_t> cores = ParseWholeNumber(fields[3], 0, 100);
  if (!cores.ok()) {
    return InvalidArgument(where() + ": cores (percent) " + cores.status().message());
  }
  d.mem_mib = *mem;
  d.cores = static_cast<int32_t>(*cores);
  return d;
}

}  // namespace

Result<PodDevices> DecodePodDevices(std::string_view text) {
  PodDevices pod;
  if (text.empty()) return pod;
  if (text.back() != ';') {
    return InvalidArgument("pod device list " + Quote(text) +
                           " does not end with ';' (every container entry ends with ';')");
  }
  auto entries = Split(text.substr(0, text.size() - 1), ';');
  for (size_t e = 0; e < entries.size(); ++e) {
    std::string_view entry = entries[e];
    ContainerDevices devices;
    if (!entry.empty()) {
      if (entry.back() != ':') {
        return InvalidArgument("container entry " + std::to_string(e) + " " + Quote(entry) +
                               " does not end with ':' (every device ends with ':')");
      }
      auto parts = Split(entry.substr(0, entry.size() - 1), ':');
      for (size_t i = 0; i < parts.size(); ++i) {
        auto d = DecodeDevice(parts[i], e, i);
        if (!d.ok()) return d.status();
        devices.push_back(std::move(d).value());
      }
    }
    pod.push_back(std::move(devices));
  }
  return pod;
}

int FirstNonEmptyEntry(const PodDevices& pod, size_t from) {
  for (size_t i = from; i < pod.size(); ++i) {
    if (!pod[i].empty()) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace vgpu::codec
