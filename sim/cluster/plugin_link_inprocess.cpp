#include "sim/cluster/plugin_link.h"

namespace vgpu::sim {

namespace {

class InProcess : public PluginLink {
 public:
  explicit InProcess(deviceplugin::DevicePlugin& plugin) : plugin_(plugin) {}

  Result<std::vector<std::string>> Devices() override {
    std::vector<std::string> ids;
    for (const deviceplugin::Replica& r : plugin_.Replicas()) {
      if (r.healthy) ids.push_back(r.id);
    }
    return ids;
  }

  Result<std::vector<ContainerEnv>> Allocate(
      const std::vector<std::vector<std::string>>& replicas) override {
    auto answers = plugin_.allocator().Allocate(replicas);
    if (!answers.ok()) return answers.status();
    std::vector<ContainerEnv> out;
    for (const allocate::ContainerResponse& r : *answers) out.push_back(r.envs);
    return out;
  }

 private:
  deviceplugin::DevicePlugin& plugin_;
};

class AllocatorOnly : public PluginLink {
 public:
  AllocatorOnly(deviceplugin::Allocator& allocator, std::vector<std::string> replicas)
      : allocator_(allocator), replicas_(std::move(replicas)) {}

  Result<std::vector<std::string>> Devices() override { return replicas_; }

  Result<std::vector<ContainerEnv>> Allocate(
      const std::vector<std::vector<std::string>>& replicas) override {
    auto answers = allocator_.Allocate(replicas);
    if (!answers.ok()) return answers.status();
    std::vector<ContainerEnv> out;
    for (const allocate::ContainerResponse& r : *answers) out.push_back(r.envs);
    return out;
  }

 private:
  deviceplugin::Allocator& allocator_;
  std::vector<std::string> replicas_;
};

}  // namespace

std::unique_ptr<PluginLink> AllocatorLink(deviceplugin::Allocator& allocator,
                                          std::vector<std::string> replicas) {
  return std::make_unique<AllocatorOnly>(allocator, std::move(replicas));
}

std::unique_ptr<PluginLink> InProcessLink(deviceplugin::DevicePlugin& plugin) {
  return std::make_unique<InProcess>(plugin);
}

}  // namespace vgpu::sim
