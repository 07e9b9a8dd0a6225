#include "deviceplugin/kubelet_answers.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "api.pb.h"
#include "core/codec/kubelet_checkpoint.h"

namespace vgpu::deviceplugin {
namespace {

constexpr std::string_view kContainersDir = "/containers/";

// The container an answer was written for: its mount of `<vgpu_dir>/containers/<uid>_<name>`.
std::optional<codec::ContainerDirName> WrittenFor(const std::string& alloc_resp) {
  v1beta1::ContainerAllocateResponse resp;
  if (!resp.ParseFromString(alloc_resp)) {
    return std::nullopt;
  }
  for (const auto& m : resp.mounts()) {
    const std::string& host = m.host_path();
    const size_t at = host.rfind(kContainersDir);
    if (at == std::string::npos) {
      continue;
    }
    const std::string_view name = std::string_view(host).substr(at + kContainersDir.size());
    if (name.find('/') != std::string_view::npos) {
      continue;
    }
    auto parsed = codec::ParseContainerDirName(name);
    if (parsed.ok()) {
      return *parsed;
    }
  }
  return std::nullopt;
}

}  // namespace

Result<std::vector<allocate::KubeletAnswer>> ReadKubeletAnswers(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) {
      return std::vector<allocate::KubeletAnswer>{};
    }
    return Unavailable("cannot read kubelet's checkpoint " + path + ": " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto entries = codec::DecodeKubeletCheckpoint(text.str());
  if (!entries.ok()) {
    return entries.status().WithContext("kubelet's checkpoint " + path);
  }
  std::vector<allocate::KubeletAnswer> out;
  out.reserve(entries->size());
  for (const auto& e : *entries) {
    out.push_back({e.pod_uid, e.container, e.resource, WrittenFor(e.alloc_resp)});
  }
  return out;
}

}  // namespace vgpu::deviceplugin
