#pragma once

// How a simulated kubelet reaches its node's device plugin: over the plugin's real gRPC unix
// socket (Registration, ListAndWatch, Allocate: what kubelet does), or by direct calls into the
// plugin library (the same Allocate code without gRPC, for large clusters).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "deviceplugin/plugin.h"

namespace vgpu::sim {

using ContainerEnv = std::map<std::string, std::string>;

class PluginLink {
 public:
  virtual ~PluginLink() = default;
  // Healthy replica IDs the plugin advertises ("<UUID>-<i>").
  virtual Result<std::vector<std::string>> Devices() = 0;
  // One Allocate: replica IDs per container request; the env of each container's answer.
  virtual Result<std::vector<ContainerEnv>> Allocate(
      const std::vector<std::vector<std::string>>& replicas) = 0;
};

std::unique_ptr<PluginLink> InProcessLink(deviceplugin::DevicePlugin& plugin);
// Allocate straight on the plugin's Allocator; `replicas` is the advertised device list.
std::unique_ptr<PluginLink> AllocatorLink(deviceplugin::Allocator& allocator,
                                          std::vector<std::string> replicas);

// A kubelet endpoint on `<dir>/kubelet.sock`: serves Registration; after the plugin registers,
// dials its socket in `dir`, reads ListAndWatch, and sends Allocate over gRPC.
class GrpcKubeletEndpoint {
 public:
  static Result<std::unique_ptr<GrpcKubeletEndpoint>> Start(const std::string& dir);
  virtual ~GrpcKubeletEndpoint() = default;
  // Waits (bounded) for the plugin's registration and first ListAndWatch answer.
  virtual Result<std::unique_ptr<PluginLink>> Connect() = 0;
  virtual int registrations() const = 0;
};

}  // namespace vgpu::sim
