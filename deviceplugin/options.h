#pragma once

// Command-line flags of vgpu-device-plugin and how they combine with HAMi's config files:
// defaults < device-config.yaml (`nvidia:`) < config.json entry of this node < flags.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "core/base/daemon_flags.h"
#include "core/config/device_config.h"
#include "deviceplugin/plugin.h"
#include "vgpu/env_contract.h"

namespace vgpu::deviceplugin {

struct Flags {
  std::string node_name;
  std::string kubeconfig;
  std::string device_plugin_path = "/var/lib/kubelet/device-plugins/";
  std::string pod_resources_socket = kDefaultPodResourcesSocket;
  std::string fake_gpus;
  std::optional<int32_t> device_split_count;
  std::optional<double> device_memory_scaling;
  std::optional<double> device_cores_scaling;
  std::optional<bool> disable_core_limit;
  std::string resource_name = "nvidia.com/gpu";
  std::string device_config;
  std::string node_config;
  std::string hook_path = VGPU_DEFAULT_HOOK_PATH;
  std::string libvgpu;
  std::string libvgpu_version;
  std::string inventory_format = "json";
  std::optional<std::string> ignored_xids;
  bool allow_disable_control = false;
  std::optional<std::string> log_level;  // LIBCUDA_LOG_LEVEL for containers
  int health_recovery_seconds = 60;
  int report_interval_seconds = 30;
  std::string lock_dir = VGPU_DEFAULT_LOCK_DIR;
  std::optional<std::string> operating_mode;  // hami-core | mps (config.json: operatingmode)
  std::string mps_dir{allocate::kDefaultMpsRoot};
  std::string mps_control = "nvidia-cuda-mps-control";
  std::string mig_strategy = "none";          // HAMi's --mig-strategy; only "none" is supported
  bool topology_score = true;                 // publish hami.io/node-nvidia-score
  std::optional<bool> numa_topology;          // NUMA node per device to kubelet (default on)
  bool advertise_extended_resources = false;  // gpumem/gpucores in the Node's status.capacity
  daemon::CommonFlags common;                 // -v
};

// Registers every flag (each with --help text) on `app`, writing into `flags`.
void AddFlags(CLI::App& app, Flags& flags);

// Socket file name for a resource: "nvidia.com/gpu" -> "vgpu-nvidia.com-gpu.sock".
std::string SocketNameFor(const std::string& resource_name);

// Combines flags with the parsed config files into plugin options (pure; file contents given).
// `default_version` names libvgpu.so.<version> when --libvgpu-version is not given.
Result<PluginOptions> ResolveOptions(const Flags& flags, const config::NvidiaConfig& device_config,
                                     const std::vector<config::NodeOverride>& node_config,
                                     const std::string& default_version);

}  // namespace vgpu::deviceplugin
