#include "deviceplugin/options.h"

namespace vgpu::deviceplugin {

void AddFlags(CLI::App& app, Flags& f) {
  app.add_option("--node-name", f.node_name, "Kubernetes node this plugin serves")
      ->envname("NODE_NAME");
  daemon::AddKubeconfigFlag(app, f.kubeconfig);
  app.add_option("--device-plugin-path", f.device_plugin_path,
                 "kubelet device-plugin directory (kubelet.sock lives there)")
      ->capture_default_str();
  app.add_option("--pod-resources-socket", f.pod_resources_socket,
                 "kubelet's pod-resources socket, asked which pod each Allocate call is for (\"\": "
                 "the node lock and annotations alone decide)")
      ->capture_default_str();
  app.add_option(
      "--fake-gpus", f.fake_gpus,
      "simulate GPUs instead of using NVML, e.g. "
      "'count=4,memory=81559,model=NVIDIA H100 80GB HBM3,uuids=GPU-a;GPU-b;GPU-c;GPU-d'");
  app.add_option(
      "--device-split-count", f.device_split_count,
      "vGPUs advertised per GPU (overrides device-config.yaml and config.json; default 10)");
  app.add_option("--device-memory-scaling", f.device_memory_scaling,
                 "advertised memory = physical x this; > 1 over-subscribes (default 1)");
  app.add_option("--device-cores-scaling", f.device_cores_scaling,
                 "advertised cores = 100 x this (default 1)");
  app.add_option("--disable-core-limit", f.disable_core_limit,
                 "true: containers get GPU_CORE_UTILIZATION_POLICY=disable");
  app.add_option("--resource-name", f.resource_name, "extended resource advertised to kubelet")
      ->capture_default_str();
  app.add_option("--device-config,--config-file", f.device_config,
                 "HAMi device-config.yaml (section nvidia:), optional (--config-file: HAMi's "
                 "spelling)");
  app.add_option("--node-config", f.node_config,
                 "HAMi per-node config.json ({\"nodeconfig\":[...]}), optional");
  app.add_option("--hook-path", f.hook_path,
                 "host directory holding vgpu/libvgpu.so.<version>, vgpu/ld.so.preload and the "
                 "containers' shared regions")
      ->envname("HOOK_PATH")
      ->capture_default_str();
  app.add_option("--libvgpu", f.libvgpu,
                 "libvgpu.so to install into <hook-path>/vgpu at start (empty: do not install)");
  app.add_option("--libvgpu-version", f.libvgpu_version,
                 "version suffix of the installed library (default: this build's version)");
  app.add_option("--inventory-format", f.inventory_format,
                 "node inventory annotation form: json (HAMi v2.8+) or legacy (text, <= v2.7)")
      ->check(CLI::IsMember({"json", "legacy"}))
      ->capture_default_str();
  app.add_option(
      "--ignored-xids", f.ignored_xids,
      "comma list of XIDs that do not make a GPU unhealthy (default 13,31,43,45,68,109)");
  app.add_flag("--allow-disable-control", f.allow_disable_control,
               "let containers opt out of limits with env " VGPU_ENV_DISABLE_CONTROL
               "=true (admin setting)");
  app.add_option("--libcuda-log-level", f.log_level,
                 VGPU_ENV_LOG_LEVEL " given to containers (0 errors .. 4 debug)");
  app.add_option("--health-recovery-seconds", f.health_recovery_seconds,
                 "a GPU marked unhealthy recovers after this long without a critical XID, once it "
                 "answers NVML again")
      ->capture_default_str();
  app.add_option("--report-interval-seconds", f.report_interval_seconds,
                 "how often the inventory and handshake annotations are refreshed")
      ->capture_default_str();
  app.add_option("--lock-dir", f.lock_dir, "host lock directory mounted into containers")
      ->capture_default_str();
  app.add_option("--topology-score", f.topology_score,
                 "publish the GPU pair scores (hami.io/node-nvidia-score) for the topology-aware "
                 "GPU policy; HAMi's chart sets ENABLE_TOPOLOGY_SCORE")
      ->envname("ENABLE_TOPOLOGY_SCORE")
      ->capture_default_str();
  app.add_option("--numa-topology", f.numa_topology,
                 "tell kubelet each GPU's NUMA node (its Topology Manager aligns CPUs and GPUs "
                 "by it); default true, or what device-config.yaml's enableNumaTopology or this "
                 "node's config.json enablenumatopology says (HAMi's keys)");
  app.add_flag("--advertise-extended-resources", f.advertise_extended_resources,
               "write the healthy GPUs' memory (MiB x memory scaling) and cores (100 x core "
               "scaling each) into the Node's status.capacity under device-config.yaml's "
               "memory and core resource names, for quotas, autoscalers and kubectl; without it "
               "(or =false) those this plugin wrote before are removed (docs/scheduler.md, "
               "Extended resources)")
      ->capture_default_str();
  app.add_option("--operating-mode", f.operating_mode,
                 "how this node's GPUs are shared: hami-core (time-sliced, libvgpu limits SMs) or "
                 "mps (one MPS control daemon per GPU; pods become its clients). Overrides "
                 "config.json's operatingmode; default hami-core");
  app.add_option("--mps-dir", f.mps_dir,
                 "MPS mode: host directory of the control daemons (<dir>/<uuid>/pipe and log, "
                 "<dir>/shm); pods get their GPU's pipe directory and shm/ mounted from it, so it "
                 "must be the same path on the host and in this container")
      ->capture_default_str();
  app.add_option("--mps-control", f.mps_control,
                 "MPS mode: the nvidia-cuda-mps-control program (a name is searched in PATH)")
      ->capture_default_str();
  app.add_option("--mig-strategy", f.mig_strategy,
                 "HAMi's MIG strategy; vgpu shares whole GPUs only, so only none is accepted")
      ->capture_default_str();
  daemon::AddCommonFlags(app, f.common, "no line of the plugin depends on it yet");
}

std::string SocketNameFor(const std::string& resource_name) {
  std::string name = "vgpu-" + resource_name;
  for (char& c : name) {
    if (c == '/') {
      c = '-';
    }
  }
  return name + ".sock";
}

Result<PluginOptions> ResolveOptions(const Flags& f, const config::NvidiaConfig& device_config,
                                     const std::vector<config::NodeOverride>& node_config,
                                     const std::string& default_version) {
  if (f.node_name.empty()) {
    return InvalidArgument("no node name: pass --node-name or set NODE_NAME (downward API)");
  }
  if (f.mig_strategy != "none") {
    return InvalidArgument("--mig-strategy=" + f.mig_strategy +
                           ": MIG is not supported by vgpu (it shares whole GPUs); use "
                           "--mig-strategy=none, HAMi's default, on nodes without MIG");
  }
  config::FlagOverrides overrides;
  overrides.device_split_count = f.device_split_count;
  overrides.device_memory_scaling = f.device_memory_scaling;
  overrides.device_core_scaling = f.device_cores_scaling;
  overrides.disable_core_limit = f.disable_core_limit;
  overrides.operating_mode = f.operating_mode;
  overrides.numa_topology = f.numa_topology;
  auto settings = config::MergeNodeSettings(device_config, node_config, f.node_name, overrides);
  if (!settings.ok()) {
    return settings.status();
  }

  PluginOptions o;
  o.node_name = f.node_name;
  o.device_plugin_path = f.device_plugin_path;
  o.pod_resources_socket = f.pod_resources_socket;
  o.resource_name = f.resource_name;
  o.socket_name = SocketNameFor(f.resource_name);
  o.split.split_count = settings->device_split_count;
  o.split.memory_scaling = settings->device_memory_scaling;
  o.split.core_scaling = settings->device_core_scaling;
  o.split.mode = settings->operating_mode;
  o.filter_uuids = settings->filter_uuids;
  o.topology_score = f.topology_score;
  o.numa_topology = settings->numa_topology;
  o.filter_indexes.assign(settings->filter_indices.begin(), settings->filter_indices.end());
  o.response.hook_path = f.hook_path;
  o.response.libvgpu_version = f.libvgpu_version.empty() ? default_version : f.libvgpu_version;
  o.response.memory_scaling = settings->device_memory_scaling;
  o.response.disable_core_limit =
      settings->disable_core_limit || settings->gpu_core_policy == config::kCorePolicyDisable;
  o.response.log_level = f.log_level;
  o.response.allow_disable_control = f.allow_disable_control;
  o.response.operating_mode = settings->operating_mode;
  o.response.mps_root = f.mps_dir;
  o.mps.root = f.mps_dir;
  o.mps.control = f.mps_control;
  if (o.split.mode == config::kOperatingModeMps) {
    // Checked here so that a bad directory stops the plugin before it serves anything.
    if (auto dirs = allocate::MpsDirsFor(f.mps_dir, "GPU-check"); !dirs.ok()) {
      return dirs.status().WithContext("--mps-dir");
    }
  }
  // The scheduler's reading of a container's ask, to check what Allocate hands it: the same
  // device-config.yaml; the count is the resource kubelet allocates.
  o.spec.names = device_config.resource_names();
  o.spec.names.count = f.resource_name;
  o.advertise_extended_resources = f.advertise_extended_resources;
  if (f.advertise_extended_resources) {
    VGPU_RETURN_IF_ERROR(codec::CheckExtendedResourceNames(o.spec.names)
                             .WithContext("--advertise-extended-resources"));
  }
  o.spec.defaults.mem_mib = device_config.default_memory;
  o.spec.defaults.cores = device_config.default_cores;
  o.spec.defaults.gpu_num = device_config.default_gpu_num;
  o.libvgpu_source = f.libvgpu;
  o.lock_dir = f.lock_dir;
  o.inventory_format = f.inventory_format == "legacy" ? codec::InventoryFormat::kLegacyText
                                                      : codec::InventoryFormat::kJson;
  if (f.ignored_xids) {
    auto xids = ParseXidList(*f.ignored_xids);
    if (!xids.ok()) {
      return xids.status().WithContext("--ignored-xids");
    }
    o.ignored_xids = *xids;
  }
  if (f.health_recovery_seconds < 0 || f.report_interval_seconds < 1) {
    return InvalidArgument(
        "--health-recovery-seconds must be >= 0 and --report-interval-seconds >= 1");
  }
  o.health_recovery = std::chrono::seconds(f.health_recovery_seconds);
  o.report_interval = std::chrono::seconds(f.report_interval_seconds);
  return o;
}

}  // namespace vgpu::deviceplugin
