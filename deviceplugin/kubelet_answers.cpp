#include "deviceplugin/kubelet_answers.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "api.pb.h"
#include "core/codec/container_dir.h"
#include "core/codec/kubelet_checkpoint.h"

namespace vgpu::deviceplugin {
namespace {

// The container an answer was written for: its mount of `<vgpu_dir>/containers/<uid>_<name>`.
std::optional<codec::ContainerDirName> WrittenFor(const std::string& alloc_resp) {
  v1beta1::ContainerAllocateResponse resp;
  if (!resp.ParseFromString(alloc_resp)) {
    return std::nullopt;
  }
  for (const auto& m : resp.mounts()) {
    auto parsed = codec::ContainerDirFromPath(m.host_path());
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
