// vgpu-device-plugin: the kubelet device plugin of one node. Flags: --help.

#include <signal.h>

#include <CLI/CLI.hpp>

#include "core/base/daemon_flags.h"
#include "core/base/log.h"
#include "core/config/config_files.h"
#include "deviceplugin/fake_gpus.h"
#include "deviceplugin/kube_cluster_api.h"
#include "deviceplugin/nvml_backend.h"
#include "deviceplugin/options.h"
#include "deviceplugin/plugin.h"

namespace {

int Fail(const vgpu::Status& s) {
  vgpu::log::Error("cannot start", {{"error", s.ToString()}});
  return 1;
}

// Blocks SIGTERM/SIGINT in every thread (set before any thread starts) and waits for one here,
// so shutdown runs on the main thread instead of in a signal handler.
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vgpu;
  using namespace vgpu::deviceplugin;
  const sigset_t signals = BlockShutdownSignals();

  CLI::App app{"vgpu-device-plugin: advertises shared GPUs to kubelet and answers Allocate"};
  Flags flags;
  AddFlags(app, flags);
  if (std::optional<int> exit = daemon::Parse(app, {argv, argv + argc}, flags.common)) return *exit;

  config::NvidiaConfig device_config;
  if (!flags.device_config.empty()) {
    auto c = config::LoadDeviceConfigFile(flags.device_config);
    if (!c.ok()) return Fail(c.status().WithContext("--device-config"));
    device_config = *c;
  }
  std::vector<config::NodeOverride> node_config;
  if (!flags.node_config.empty()) {
    auto c = config::LoadNodeConfigFile(flags.node_config);
    if (!c.ok()) return Fail(c.status().WithContext("--node-config"));
    node_config = *c;
  }
  auto options = ResolveOptions(flags, device_config, node_config, VGPU_VERSION);
  if (!options.ok()) return Fail(options.status());

  std::unique_ptr<GpuBackend> backend;
  if (!flags.fake_gpus.empty()) {
    auto fake = ParseFakeGpuSpec(flags.fake_gpus, flags.node_name);
    if (!fake.ok()) return Fail(fake.status());
    backend = std::make_unique<FakeGpuBackend>(std::move(*fake));
  } else {
    auto nvml = OpenNvmlBackend();
    if (!nvml.ok()) return Fail(nvml.status());
    backend = std::move(*nvml);
  }

  auto kube_config = kube::DefaultConfig(flags.kubeconfig);
  if (!kube_config.ok()) return Fail(kube_config.status().WithContext("Kubernetes API config"));
  kube_config->user_agent = "vgpu-device-plugin/" VGPU_VERSION;
  auto kube_client = kube::Client::New(*kube_config);
  if (!kube_client.ok()) return Fail(kube_client.status());
  auto cluster =
      std::make_unique<KubeClusterApi>(std::shared_ptr<kube::Client>(std::move(*kube_client)));

  DevicePlugin plugin(std::move(*options), std::move(cluster), std::move(backend));
  if (Status s = plugin.Start(); !s.ok()) return Fail(s);
  log::Info("running", {{"node", flags.node_name}, {"socket", plugin.SocketPath()}});

  int sig = 0;
  sigwait(&signals, &sig);
  log::Info("shutting down", {{"signal", sig}});
  plugin.Stop();
  return 0;
}
