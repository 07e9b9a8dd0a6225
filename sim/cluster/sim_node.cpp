#include "sim/cluster/sim_node.h"

#include <filesystem>

#include "core/codec/annotations.h"
#include "deviceplugin/devices.h"
#include "deviceplugin/fake_gpus.h"
#include "deviceplugin/kube_cluster_api.h"

namespace vgpu::sim {

namespace {

using nlohmann::json;

const ResourceInfo& Res(std::string_view plural) {
  return *FindResource("v1", plural);
}

// Replica IDs per container request, in the order kubelet sends them (init containers first).
std::vector<int> GpuCountsPerContainer(const json& pod) {
  std::vector<int> counts;
  for (const char* list : {"initContainers", "containers"}) {
    const json spec = pod.value("spec", json::object());
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (const json& c : spec[list]) {
      int n = 0;
      const json::json_pointer ptr("/resources/limits/nvidia.com~1gpu");
      if (c.contains(ptr)) {
        const json& v = c.at(ptr);
        if (v.is_number_integer()) n = v.get<int>();
        if (v.is_string()) n = std::atoi(v.get<std::string>().c_str());
      }
      if (n > 0) counts.push_back(n);
    }
  }
  return counts;
}

}  // namespace

std::string PodKey(const json& pod) {
  const json meta = pod.value("metadata", json::object());
  return meta.value("namespace", "default") + "/" + meta.value("name", "");
}

Result<std::unique_ptr<SimNode>> SimNode::Start(const NodeSpec& spec, ApiServer& api,
                                                const SimNodeOptions& options) {
  std::unique_ptr<SimNode> node(new SimNode(spec.name, api));
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) return Internal("cannot create " + options.dir + ": " + ec.message());

  json object = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", spec.name}, {"labels", {{"gpu", "on"}, {"kubernetes.io/hostname", spec.name}}}}},
      {"status",
       {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
        {"capacity", json::object()},
        {"allocatable", json::object()}}}};
  Result<json> created = api.store().Create(Res("nodes"), "", object);
  if (!created.ok()) return created.status().WithContext("creating node " + spec.name);

  if (options.mode == PluginMode::kAllocatorOnly) {
    VGPU_RETURN_IF_ERROR(node->StartAllocatorOnly(spec, options));
  } else {
    VGPU_RETURN_IF_ERROR(node->StartPlugin(spec, options));
  }
  auto devices = node->link_->Devices();
  if (!devices.ok()) return devices.status().WithContext("device list of " + spec.name);
  node->all_replicas_ = std::move(*devices);

  const std::string count = std::to_string(node->all_replicas_.size());
  const json status_patch = {
      {"status",
       {{"capacity", {{"nvidia.com/gpu", count}}}, {"allocatable", {{"nvidia.com/gpu", count}}}}}};
  Result<json> patched =
      api.store().Patch(Res("nodes"), "", spec.name, PatchType::kMerge, status_patch);
  if (!patched.ok()) return patched.status().WithContext("node status of " + spec.name);
  return node;
}

std::vector<deviceplugin::GpuDevice> SimNode::Gpus(const NodeSpec& spec) {
  std::vector<deviceplugin::GpuDevice> gpus;
  for (size_t i = 0; i < spec.gpus.size(); ++i) {
    const GpuSpec& g = spec.gpus[i];
    gpus.push_back(
        deviceplugin::GpuDevice{g.uuid, static_cast<int>(i), g.model, g.memory_mib, g.numa});
  }
  return gpus;
}

// The plugin's Allocate logic and inventory encoding without its servers and threads.
Status SimNode::StartAllocatorOnly(const NodeSpec& spec, const SimNodeOptions& options) {
  const std::vector<deviceplugin::GpuDevice> gpus = Gpus(spec);
  deviceplugin::SplitConfig split;
  split.split_count = options.split_count;
  deviceplugin::AnnotationPatch patch;
  patch[std::string(annotations::kNodeNvidiaRegister)] = codec::EncodeInventory(
      deviceplugin::BuildInventory(gpus, split, {}), codec::InventoryFormat::kJson);
  Result<std::optional<codec::GpuTopology>> topology = NodeTopology(spec);
  if (!topology.ok()) return topology.status();
  if (topology->has_value()) {
    // What the plugin publishes at Start with --topology-score (on by default).
    patch[std::string(annotations::kNodeNvidiaScore)] =
        deviceplugin::EncodeNodePairScores(**topology, gpus);
  }
  allocator_api_ = std::make_unique<deviceplugin::KubeClusterApi>(options.client);
  VGPU_RETURN_IF_ERROR(allocator_api_->PatchNodeAnnotations(spec.name, patch)
                           .WithContext("inventory of " + spec.name));
  deviceplugin::AllocatorConfig config;
  config.node = spec.name;
  config.response.hook_path = options.dir + "/hook";
  allocator_ = std::make_unique<deviceplugin::Allocator>(*allocator_api_, config);
  allocator_->SetNodeGpus(deviceplugin::BuildInventory(gpus, split, {}));
  std::vector<std::string> ids;
  for (const deviceplugin::Replica& r :
       deviceplugin::BuildReplicas(gpus, options.split_count, {})) {
    ids.push_back(r.id);
  }
  link_ = AllocatorLink(*allocator_, std::move(ids));
  return Status::Ok();
}

Status SimNode::StartPlugin(const NodeSpec& spec, const SimNodeOptions& options) {
  const bool grpc = options.mode == PluginMode::kGrpc;
  SimNode* node = this;
  if (grpc) {
    auto endpoint = GrpcKubeletEndpoint::Start(options.dir);
    if (!endpoint.ok()) return endpoint.status();
    node->endpoint_ = std::move(*endpoint);
  }

  deviceplugin::PluginOptions po;
  po.node_name = spec.name;
  po.device_plugin_path = options.dir;
  po.socket_name = "vgpu.sock";
  po.split.split_count = options.split_count;
  po.response.hook_path = options.dir + "/hook";
  po.install_hook = false;
  po.lock_dir = options.dir + "/vgpulock";
  po.register_with_kubelet = grpc;
  po.pod_resources_socket.clear();  // the simulated kubelet serves no pod-resources API
  Result<std::optional<codec::GpuTopology>> topology = NodeTopology(spec);
  if (!topology.ok()) return topology.status();
  node->plugin_ = std::make_unique<deviceplugin::DevicePlugin>(
      po, std::make_unique<deviceplugin::KubeClusterApi>(options.client),
      std::make_unique<deviceplugin::FakeGpuBackend>(Gpus(spec), std::move(*topology)));
  VGPU_RETURN_IF_ERROR(node->plugin_->Start().WithContext("device plugin of " + spec.name));

  if (grpc) {
    auto link = node->endpoint_->Connect();
    if (!link.ok()) return link.status();
    node->link_ = std::move(*link);
  } else {
    node->link_ = InProcessLink(*node->plugin_);
  }
  return Status::Ok();
}

SimNode::~SimNode() {
  if (plugin_) plugin_->Stop();
}

Status SimNode::RunPod(const json& pod) {
  const std::string key = PodKey(pod);
  const std::vector<int> counts = GpuCountsPerContainer(pod);
  std::vector<std::vector<std::string>> requests;
  {
    std::lock_guard lock(mu_);
    std::vector<std::string> available;
    for (const std::string& id : all_replicas_) {
      if (!used_.count(id)) available.push_back(id);
    }
    for (int n : counts) {
      std::vector<std::string> pick = deviceplugin::PreferReplicas(available, {}, n);
      if (static_cast<int>(pick.size()) < n) {
        return ResourceExhausted("node " + name_ + " has no " + std::to_string(n) +
                                 " free nvidia.com/gpu replicas for " + key);
      }
      for (const std::string& id : pick) {
        used_.insert(id);
        available.erase(std::find(available.begin(), available.end(), id));
      }
      by_pod_[key].insert(by_pod_[key].end(), pick.begin(), pick.end());
      requests.push_back(std::move(pick));
    }
  }
  const json meta = pod.value("metadata", json::object());
  const std::string ns = meta.value("namespace", "default");
  const std::string name = meta.value("name", "");
  json patch;
  Status outcome = Status::Ok();
  if (requests.empty()) {
    patch = {{"status", {{"phase", "Running"}}}};
  } else {
    auto envs = link_->Allocate(requests);
    if (envs.ok()) {
      patch = {{"metadata", {{"annotations", {{kAllocateEnvAnnotation, json(*envs).dump()}}}}},
               {"status", {{"phase", "Running"}}}};
    } else {
      outcome = envs.status();
      ReleasePod(key);
      patch = {{"status",
                {{"phase", "Failed"},
                 {"reason", "UnexpectedAdmissionError"},
                 {"message", "Allocate failed: " + outcome.message()}}}};
    }
  }
  Result<json> r = api_.store().Patch(Res("pods"), ns, name, PatchType::kMerge, patch);
  if (!r.ok() && r.status().code() != StatusCode::kNotFound) {
    return r.status().WithContext("kubelet status update of " + key);
  }
  return outcome;
}

void SimNode::ReleasePod(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = by_pod_.find(key);
  if (it == by_pod_.end()) return;
  for (const std::string& id : it->second) used_.erase(id);
  by_pod_.erase(it);
}

}  // namespace vgpu::sim
