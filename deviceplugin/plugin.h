#pragma once

// One device plugin for one node: serves kubelet's device-plugin API on a unix socket,
// registers with kubelet (again whenever kubelet restarts), reports the node's GPUs in the
// inventory annotation, tracks health, and answers Allocate. Owns no globals, so the simulated
// cluster can run many of them in one process.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/allocate/container_response.h"
#include "core/codec/extended_resources.h"
#include "core/codec/node_inventory.h"
#include "deviceplugin/allocator.h"
#include "deviceplugin/cluster_api.h"
#include "deviceplugin/devices.h"
#include "deviceplugin/gpu_backend.h"
#include "deviceplugin/health.h"
#include "deviceplugin/kubelet_pods.h"
#include "deviceplugin/mps_daemon.h"
#include "vgpu/env_contract.h"

namespace grpc {
class Server;
}

namespace vgpu::deviceplugin {

struct PluginOptions {
  std::string node_name;
  std::string device_plugin_path = "/var/lib/kubelet/device-plugins/";
  // kubelet's pod-resources socket, asked which pod each Allocate call is for
  // (deviceplugin/kubelet_pods.h); empty: not asked.
  std::string pod_resources_socket = kDefaultPodResourcesSocket;
  std::string socket_name = "vgpu-nvidia.sock";
  std::string kubelet_socket_name = "kubelet.sock";
  std::string resource_name = "nvidia.com/gpu";
  SplitConfig split;
  allocate::ResponseSettings response;  // hook path, libvgpu version, core policy, ...
  allocate::SpecRules spec;             // how the scheduler reads a container's ask
  std::string libvgpu_source;           // installed into the hook path at start (may be empty)
  bool install_hook = true;
  std::string lock_dir = VGPU_DEFAULT_LOCK_DIR;
  codec::InventoryFormat inventory_format = codec::InventoryFormat::kJson;
  std::vector<std::string> filter_uuids;
  std::vector<int> filter_indexes;
  std::set<uint64_t> ignored_xids = DefaultIgnoredXids();
  std::chrono::seconds health_recovery{60};
  std::chrono::milliseconds health_probe_interval{5000};
  std::chrono::milliseconds report_interval{30000};
  std::chrono::milliseconds kubelet_poll_interval{500};
  bool register_with_kubelet = true;
  // Publish hami.io/node-nvidia-score from the backend's topology (when it has one).
  bool topology_score = true;
  // ListAndWatch gives each device its GPU's NUMA node (TopologyInfo), for kubelet's Topology
  // Manager. Off (HAMi's enableNumaTopology: false): no topology, so a single-numa-node policy
  // admits vGPU pods whatever their CPUs' NUMA node, as under HAMi.
  bool numa_topology = true;
  // Advertise the healthy GPUs' memory and cores as node extended resources under
  // spec.names.memory / spec.names.cores (core/codec/extended_resources.h). Off: withdraw those
  // this plugin advertised before (codec::kExtendedResourcesAnnotation), touch nothing else.
  bool advertise_extended_resources = false;
  // split.mode == mps: the MPS control daemons' directories and program (docs/mps.md).
  MpsOptions mps;
  // false: no gRPC socket at all (the simulated cluster calls allocator() and Replicas()
  // directly, so 100 simulated nodes need no 100 servers). Implies no kubelet registration.
  bool serve_grpc = true;
};

class DevicePlugin {
 public:
  DevicePlugin(PluginOptions options, std::unique_ptr<ClusterApi> api,
               std::unique_ptr<GpuBackend> backend);
  ~DevicePlugin();
  DevicePlugin(const DevicePlugin&) = delete;
  DevicePlugin& operator=(const DevicePlugin&) = delete;

  // Discovers GPUs, installs the hook files, serves, registers with kubelet, writes the
  // inventory, starts the health and kubelet-watch threads. An error leaves nothing running.
  Status Start();
  // Stops threads and the server, removes the socket. Idempotent.
  void Stop();

  std::string SocketPath() const;
  std::vector<Replica> Replicas();
  std::vector<GpuDevice> Gpus();
  // Number of successful registrations with kubelet (re-registrations included).
  int Registrations() const { return registrations_.load(); }

  // --- called by the gRPC service ---
  // Blocks until the device list changes past `seen`, `deadline` passes, or the plugin stops.
  // Returns the current generation.
  uint64_t WaitForChange(uint64_t seen, std::chrono::steady_clock::time_point deadline);
  bool Stopping() const { return stopping_.load(); }
  Allocator& allocator() { return *allocator_; }
  const PluginOptions& options() const { return options_; }

 private:
  class Service;

  Status StartServer();
  void StopServer();
  Status RegisterWithKubelet();
  Status ReportInventory();
  Status SyncExtendedResources(const codec::ExtendedCapacity& want);
  void ComputePairScores(const std::vector<GpuDevice>& kept);
  void HealthLoop();
  void WatchLoop();
  void MarkChanged();
  // XID/probe-unhealthy GPUs and, in MPS mode, those whose control daemon is down. Under mu_.
  std::set<std::string> UnhealthyLocked() const;
  uint64_t KubeletSocketId() const;

  PluginOptions options_;
  std::unique_ptr<ClusterApi> api_;
  std::unique_ptr<GpuBackend> backend_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;

  mutable std::mutex mu_;
  std::condition_variable changed_cv_;
  std::vector<GpuDevice> gpus_;
  HealthTracker health_;
  std::unique_ptr<MpsSupervisor> mps_;   // MPS mode only; set in Start before the threads
  std::set<std::string> mps_unhealthy_;  // mps_->Unhealthy() as of the last tick, under mu_
  uint64_t generation_ = 1;
  uint64_t reported_generation_ = 0;
  std::string last_inventory_;
  std::string pair_scores_;  // hami.io/node-nvidia-score, fixed at Start; empty: not published

  // The reporter's own (Start, then the watch thread): the names the node's annotation
  // codec::kExtendedResourcesAnnotation lists (read from the node once), and the capacity last
  // written.
  std::optional<std::set<std::string>> advertised_;
  codec::ExtendedCapacity written_capacity_;
  // Off, and the withdrawal was refused (no RBAC on nodes/status): warned once, not retried.
  bool withdraw_refused_ = false;

  std::atomic<bool> stopping_{false};
  std::atomic<int> registrations_{0};
  bool started_ = false;
  std::mutex server_mu_;
  std::thread health_thread_;
  std::thread watch_thread_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
};

}  // namespace vgpu::deviceplugin
