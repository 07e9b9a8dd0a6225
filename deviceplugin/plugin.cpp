#include "deviceplugin/plugin.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "api.grpc.pb.h"
#include "core/base/log.h"
#include "core/codec/annotations.h"
#include "core/codec/node_lock.h"
#include "deviceplugin/hook_installer.h"
#include "deviceplugin/kubelet_answers.h"
#include "deviceplugin/kubelet_pods.h"

namespace vgpu::deviceplugin {
namespace {

constexpr const char* kApiVersion = "v1beta1";
constexpr const char* kHealthy = "Healthy";
constexpr const char* kUnhealthy = "Unhealthy";

std::string NodeAnnotation(const nlohmann::json& node, std::string_view key) {
  auto meta = node.find("metadata");
  if (meta == node.end() || !meta->is_object()) return "";
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return "";
  auto v = ann->find(std::string(key));
  return v != ann->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (!dir.empty() && dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

grpc::StatusCode ToGrpcCode(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case StatusCode::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case StatusCode::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case StatusCode::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case StatusCode::kDeadlineExceeded:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case StatusCode::kPermissionDenied:
      return grpc::StatusCode::PERMISSION_DENIED;
    default:
      return grpc::StatusCode::INTERNAL;
  }
}

// The options kubelet reads at registration (and may ask again for). PreStartContainer is
// required for what kubelet checks before calling it: that it still holds the container's devices.
// kubelet 1.20 drops a deleted pod's devices and, when it starts that pod's container anyway,
// calls Allocate again for it; Allocate names no pod, so that call took the answer of the pod
// being bound next (marking it allocated), and that pod's own Allocate then got another pod's
// answer or nothing (docs/reliability.md). With PreStartContainer required, kubelet refuses to
// start the deleted pod's container instead ("no devices found allocated in local cache").
void SetOptions(v1beta1::DevicePluginOptions& options) {
  options.set_pre_start_required(true);
  options.set_get_preferred_allocation_available(true);
}

}  // namespace

class DevicePlugin::Service final : public v1beta1::DevicePlugin::Service {
 public:
  explicit Service(DevicePlugin& plugin) : plugin_(plugin) {}

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const v1beta1::Empty*,
                                      v1beta1::DevicePluginOptions* out) override {
    SetOptions(*out);
    return grpc::Status::OK;
  }

  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const v1beta1::Empty*,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override {
    uint64_t seen = 0;
    while (!plugin_.Stopping() && !ctx->IsCancelled()) {
      uint64_t now = plugin_.WaitForChange(
          seen, std::chrono::steady_clock::now() + std::chrono::milliseconds(500));
      if (now == seen) continue;
      seen = now;
      v1beta1::ListAndWatchResponse resp;
      for (const auto& r : plugin_.Replicas()) {
        auto* d = resp.add_devices();
        d->set_id(r.id);
        d->set_health(r.healthy ? kHealthy : kUnhealthy);
        if (plugin_.options().numa_topology) d->mutable_topology()->add_nodes()->set_id(r.numa);
      }
      if (!writer->Write(resp)) break;  // kubelet went away
      log::Info("ListAndWatch sent",
                {{"node", plugin_.options().node_name}, {"devices", resp.devices_size()}});
    }
    return grpc::Status::OK;
  }

  grpc::Status GetPreferredAllocation(grpc::ServerContext*,
                                      const v1beta1::PreferredAllocationRequest* req,
                                      v1beta1::PreferredAllocationResponse* out) override {
    for (const auto& c : req->container_requests()) {
      std::vector<std::string> available(c.available_deviceids().begin(),
                                         c.available_deviceids().end());
      std::vector<std::string> must(c.must_include_deviceids().begin(),
                                    c.must_include_deviceids().end());
      auto* resp = out->add_container_responses();
      for (auto& id : PreferReplicas(available, must, static_cast<size_t>(c.allocation_size()))) {
        resp->add_deviceids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status Allocate(grpc::ServerContext*, const v1beta1::AllocateRequest* req,
                        v1beta1::AllocateResponse* out) override {
    std::vector<std::vector<std::string>> replicas;
    for (const auto& c : req->container_requests()) {
      replicas.emplace_back(c.devices_ids().begin(), c.devices_ids().end());
    }
    auto result = plugin_.allocator().Allocate(replicas);
    if (!result.ok()) {
      return grpc::Status(ToGrpcCode(result.status().code()), result.status().message());
    }
    for (const auto& r : *result) {
      auto* resp = out->add_container_responses();
      for (const auto& [k, v] : r.envs) (*resp->mutable_envs())[k] = v;
      for (const auto& m : r.mounts) {
        auto* mount = resp->add_mounts();
        mount->set_container_path(m.container_path);
        mount->set_host_path(m.host_path);
        mount->set_read_only(m.read_only);
      }
    }
    return grpc::Status::OK;
  }

  // Nothing to prepare: the call exists for what kubelet does before it (SetOptions).
  grpc::Status PreStartContainer(grpc::ServerContext*, const v1beta1::PreStartContainerRequest*,
                                 v1beta1::PreStartContainerResponse*) override {
    return grpc::Status::OK;
  }

 private:
  DevicePlugin& plugin_;
};

DevicePlugin::DevicePlugin(PluginOptions options, std::unique_ptr<ClusterApi> api,
                           std::unique_ptr<GpuBackend> backend)
    : options_(std::move(options)),
      api_(std::move(api)),
      backend_(std::move(backend)),
      health_(options_.ignored_xids, options_.health_recovery) {
  HookLayout layout{options_.response.hook_path, options_.response.libvgpu_version};
  AllocatorConfig config;
  config.node = options_.node_name;
  config.response = options_.response;
  config.spec = options_.spec;
  config.resource_name = options_.resource_name;
  if (options_.serve_grpc) {  // a real kubelet beside us writes its checkpoint there
    config.kubelet_answers = [path =
                                  JoinPath(options_.device_plugin_path, kKubeletCheckpointName)] {
      return ReadKubeletAnswers(path);
    };
    if (!options_.pod_resources_socket.empty()) {
      config.kubelet_pods = [lister = std::make_shared<KubeletPodLister>(
                                 options_.pod_resources_socket, options_.resource_name)] {
        return lister->List();
      };
    }
  }
  config.prepare_host = [layout](const std::string& uid, const std::string& container) {
    return EnsureContainerDir(layout, uid, container);
  };
  allocator_ = std::make_unique<Allocator>(*api_, std::move(config));
  service_ = std::make_unique<Service>(*this);
}

DevicePlugin::~DevicePlugin() {
  Stop();
}

std::string DevicePlugin::SocketPath() const {
  return JoinPath(options_.device_plugin_path, options_.socket_name);
}

std::vector<GpuDevice> DevicePlugin::Gpus() {
  std::lock_guard lock(mu_);
  return gpus_;
}

std::vector<Replica> DevicePlugin::Replicas() {
  std::lock_guard lock(mu_);
  return BuildReplicas(gpus_, options_.split.split_count, UnhealthyLocked());
}

std::set<std::string> DevicePlugin::UnhealthyLocked() const {
  if (mps_unhealthy_.empty()) return health_.Unhealthy();
  std::set<std::string> out = health_.Unhealthy();
  out.insert(mps_unhealthy_.begin(), mps_unhealthy_.end());
  return out;
}

uint64_t DevicePlugin::WaitForChange(uint64_t seen,
                                     std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  changed_cv_.wait_until(lock, deadline, [&] { return generation_ != seen || stopping_.load(); });
  return generation_;
}

void DevicePlugin::MarkChanged() {
  {
    std::lock_guard lock(mu_);
    ++generation_;
  }
  changed_cv_.notify_all();
  stop_cv_.notify_all();  // wakes the reporter to write the inventory now
}

Status DevicePlugin::Start() {
  if (options_.node_name.empty()) {
    return InvalidArgument("node name is empty; pass --node-name or set NODE_NAME");
  }
  if (options_.split.split_count < 1) {
    return InvalidArgument("device split count must be >= 1");
  }
  auto gpus = backend_->Discover();
  if (!gpus.ok()) return gpus.status().WithContext("discovering GPUs");
  auto kept = FilterGpus(*gpus, options_.filter_uuids, options_.filter_indexes);
  {
    std::lock_guard lock(mu_);
    gpus_ = kept;
  }
  allocator_->SetNodeGpus(BuildInventory(kept, options_.split, {}));
  log::Info("discovered GPUs", {{"node", options_.node_name},
                                {"gpus", gpus->size()},
                                {"kept", kept.size()},
                                {"split", options_.split.split_count},
                                {"numa_topology", options_.numa_topology}});
  ComputePairScores(kept);

  if (options_.install_hook) {
    HookLayout layout{options_.response.hook_path, options_.response.libvgpu_version};
    VGPU_RETURN_IF_ERROR(InstallHook(layout, options_.libvgpu_source, options_.lock_dir)
                             .WithContext("installing libvgpu into " + layout.VgpuDir()));
  }
  if (options_.split.mode == annotations::kModeMps) {
    // Daemons before the first ListAndWatch and inventory: a GPU is offered to MPS pods only once
    // its daemon answers.
    std::vector<std::string> uuids;
    uuids.reserve(kept.size());
    for (const GpuDevice& g : kept) uuids.push_back(g.uuid);
    auto mps = std::make_unique<MpsSupervisor>(options_.mps, std::move(uuids));
    VGPU_RETURN_IF_ERROR(mps->Start(std::chrono::steady_clock::now())
                             .WithContext("starting the MPS control daemons"));
    std::lock_guard lock(mu_);
    mps_unhealthy_ = mps->Unhealthy();
    mps_ = std::move(mps);
  }
  stopping_ = false;
  if (options_.serve_grpc) {
    Status served = StartServer();
    if (!served.ok()) {
      mps_.reset();  // quits the daemons: an error leaves nothing running
      return served;
    }
  }
  if (options_.serve_grpc && options_.register_with_kubelet) {
    Status reg = RegisterWithKubelet();
    if (!reg.ok()) {
      StopServer();
      mps_.reset();
      return reg;
    }
  }
  Status reported = ReportInventory();
  if (!reported.ok()) {
    // Not fatal: kubelet can already use the devices; the reporter retries.
    log::Warn("node report not complete yet",
              {{"node", options_.node_name}, {"error", reported.ToString()}});
  }
  started_ = true;
  health_thread_ = std::thread([this] { HealthLoop(); });
  watch_thread_ = std::thread([this] { WatchLoop(); });
  return Status::Ok();
}

void DevicePlugin::Stop() {
  if (stopping_.exchange(true)) return;
  changed_cv_.notify_all();
  { std::lock_guard lock(stop_mu_); }
  stop_cv_.notify_all();
  if (health_thread_.joinable()) health_thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  StopServer();
  // After the server: no Allocate sends a pod to a daemon that is going away.
  if (mps_) mps_->StopAll();
  if (started_) log::Info("stopped", {{"node", options_.node_name}});
  started_ = false;
}

Status DevicePlugin::StartServer() {
  std::lock_guard lock(server_mu_);
  const std::string path = SocketPath();
  ::unlink(path.c_str());  // a stale socket from a previous run would make bind fail
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) {
    return Unavailable("cannot serve the device-plugin API on " + path +
                       " (does the directory exist and is it writable?)");
  }
  log::Info("serving", {{"socket", path}});
  return Status::Ok();
}

void DevicePlugin::StopServer() {
  std::lock_guard lock(server_mu_);
  if (!server_) return;
  changed_cv_.notify_all();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  server_.reset();
  ::unlink(SocketPath().c_str());
}

Status DevicePlugin::RegisterWithKubelet() {
  const std::string kubelet = JoinPath(options_.device_plugin_path, options_.kubelet_socket_name);
  auto channel = grpc::CreateChannel("unix://" + kubelet, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version(kApiVersion);
  req.set_endpoint(options_.socket_name);
  req.set_resource_name(options_.resource_name);
  SetOptions(*req.mutable_options());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  ctx.set_wait_for_ready(true);
  v1beta1::Empty resp;
  grpc::Status s = stub->Register(&ctx, req, &resp);
  if (!s.ok()) {
    return Unavailable("registering " + options_.resource_name + " with kubelet at " + kubelet +
                       " failed: " + s.error_message() + " (is kubelet running?)");
  }
  registrations_.fetch_add(1);
  log::Info("registered with kubelet",
            {{"resource", options_.resource_name}, {"endpoint", options_.socket_name}});
  return Status::Ok();
}

void DevicePlugin::ComputePairScores(const std::vector<GpuDevice>& kept) {
  std::string scores;
  if (options_.topology_score) {
    auto topology = backend_->Topology();
    if (!topology.ok()) {
      log::Warn("no GPU pair scores: reading the topology failed",
                {{"node", options_.node_name}, {"error", topology.status().ToString()}});
    } else if (topology->has_value()) {
      std::vector<std::pair<std::string, std::string>> asymmetric;
      scores = EncodeNodePairScores(**topology, kept, &asymmetric);
      for (const auto& [gpu, peer] : asymmetric) {
        log::Warn(
            "asymmetric P2P link data: pair scored 0 (possible NVLink hardware or driver issue)",
            {{"node", options_.node_name}, {"gpu", gpu}, {"peer", peer}});
      }
      log::Info("GPU pair scores",
                {{"node", options_.node_name}, {annotations::kNodeNvidiaScore, scores}});
    }
  }
  std::lock_guard lock(mu_);
  pair_scores_ = std::move(scores);
}

Status DevicePlugin::ReportInventory() {
  codec::NodeInventory inv;
  uint64_t gen = 0;
  std::string scores;
  {
    std::lock_guard lock(mu_);
    inv = BuildInventory(gpus_, options_.split, UnhealthyLocked());
    gen = generation_;
    scores = pair_scores_;
  }
  const std::string encoded = codec::EncodeInventory(inv, options_.inventory_format);
  AnnotationPatch patch;
  patch[std::string(annotations::kNodeHandshake)] = codec::EncodeHandshake(
      {codec::HandshakeState::kReported,
       std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now())});
  patch[std::string(annotations::kNodeNvidiaRegister)] = encoded;
  // No scores (no topology, or --topology-score=false): remove any a previous run left, which
  // may name GPUs this node no longer has.
  patch[std::string(annotations::kNodeNvidiaScore)] =
      scores.empty() ? std::nullopt : std::optional<std::string>(scores);

  // Which extended resources an earlier run advertised: read once, so that turning the option
  // off (or renaming a resource) withdraws exactly those, and an off plugin on a node it never
  // advertised on writes no status at all.
  if (!advertised_) {
    auto node = api_->GetNode(options_.node_name);
    if (!node.ok()) {
      return node.status().WithContext("reading node " + options_.node_name +
                                       " (which extended resources it advertised before)");
    }
    advertised_ =
        codec::DecodeAdvertisedNames(NodeAnnotation(*node, codec::kExtendedResourcesAnnotation));
  }
  const codec::ExtendedCapacity want =
      options_.advertise_extended_resources
          ? codec::ExtendedResourceCapacity(inv, options_.spec.names)
          : codec::ExtendedCapacity{};
  std::set<std::string> marked = *advertised_;
  for (const auto& [name, value] : want) marked.insert(name);
  // Marked before the status write: a crash in between leaves a name to withdraw, never a
  // resource in the node's capacity that no run knows to be its own. While advertising, marked
  // on every report (it rides on the inventory's patch): a mark removed by hand while the entries
  // are still being written would leave them unknown to the start that should withdraw them.
  if (marked != *advertised_ || !want.empty()) {
    patch[std::string(codec::kExtendedResourcesAnnotation)] = codec::EncodeAdvertisedNames(marked);
  }

  Status s = api_->PatchNodeAnnotations(options_.node_name, patch);
  if (!s.ok()) return s.WithContext("writing the inventory of node " + options_.node_name);
  advertised_ = std::move(marked);
  {
    std::lock_guard lock(mu_);
    if (encoded != last_inventory_) {
      log::Info("inventory written", {{"node", options_.node_name}, {"gpus", inv.size()}});
    }
    last_inventory_ = encoded;
    reported_generation_ = gen;
  }
  return SyncExtendedResources(want);
}

// Written on every report, not only on change: kubelet zeroes every extended resource when it
// finds the node recreated, and an unchanged merge patch costs the API server no write.
Status DevicePlugin::SyncExtendedResources(const codec::ExtendedCapacity& want) {
  std::set<std::string> withdraw;
  for (const std::string& name : *advertised_) {
    if (!want.contains(name)) withdraw.insert(name);
  }
  if (want.empty() && (withdraw.empty() || withdraw_refused_)) return Status::Ok();
  Status s =
      api_->PatchNodeStatus(options_.node_name, codec::ExtendedResourceStatusPatch(want, withdraw));
  if (!s.ok() && want.empty() && s.code() == StatusCode::kPermissionDenied) {
    // Off, and no longer allowed to write the status: the chart grants nodes/status only with
    // the option on, so turning it off through the chart lands here. Cleaning up is not worth a
    // failed report (and a retry every 5 s) on a node whose GPUs work; say once what is left and
    // how to remove it, and try again at the next start.
    withdraw_refused_ = true;
    log::Warn(
        "extended resources left in the node's capacity: this plugin advertised them before and "
        "may not patch nodes/status now; remove them by hand (docs/scheduler.md, \"Extended "
        "resources\") or grant the ServiceAccount patch on nodes/status "
        "(deploy/rbac/extended-resources/) and restart the plugin",
        {{"node", options_.node_name},
         {"resources", codec::EncodeAdvertisedNames(withdraw)},
         {"error", s.message()}});
    return Status::Ok();
  }
  if (!s.ok()) {
    std::string message = std::string(want.empty() ? "withdrawing" : "advertising") +
                          " the extended resources of node " + options_.node_name + ": " +
                          s.message();
    if (s.code() == StatusCode::kPermissionDenied) {
      message +=
          " (the device plugin's ServiceAccount needs patch on nodes/status: chart value "
          "devicePlugin.advertiseExtendedResources=true grants it; without the chart, apply "
          "deploy/rbac/extended-resources/)";
    }
    return Status(s.code(), std::move(message));
  }
  if (want != written_capacity_ && !want.empty()) {
    std::string capacity;
    for (const auto& [name, value] : want) {
      capacity += (capacity.empty() ? "" : ",") + name + "=" + std::to_string(value);
    }
    log::Info("extended resources advertised",
              {{"node", options_.node_name}, {"capacity", capacity}});
  }
  written_capacity_ = want;
  if (withdraw.empty()) return Status::Ok();
  log::Info("extended resources withdrawn",
            {{"node", options_.node_name}, {"resources", codec::EncodeAdvertisedNames(withdraw)}});
  std::set<std::string> kept;
  for (const auto& [name, value] : want) kept.insert(name);
  AnnotationPatch unmark;
  unmark[std::string(codec::kExtendedResourcesAnnotation)] =
      kept.empty() ? std::nullopt : std::optional<std::string>(codec::EncodeAdvertisedNames(kept));
  VGPU_RETURN_IF_ERROR(
      api_->PatchNodeAnnotations(options_.node_name, unmark)
          .WithContext("unmarking the withdrawn extended resources of node " + options_.node_name));
  advertised_ = std::move(kept);
  return Status::Ok();
}

void DevicePlugin::HealthLoop() {
  auto next_probe = std::chrono::steady_clock::now();
  while (!stopping_) {
    auto event = backend_->WaitXid(std::chrono::milliseconds(200));
    if (stopping_) break;
    auto now = std::chrono::steady_clock::now();
    bool changed = false;
    if (!event.ok()) {
      log::Warn("XID wait failed", {{"error", event.status().ToString()}});
      // Do not spin on a broken event set; probing below still tracks health.
      std::unique_lock lock(stop_mu_);
      stop_cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_.load(); });
    } else if (event->has_value()) {
      const XidEvent& e = **event;
      std::lock_guard lock(mu_);
      if (health_.OnXid(e.uuid, e.xid, now)) {
        changed = true;
        log::Warn("GPU unhealthy", {{"node", options_.node_name}, {"gpu", e.uuid}, {"xid", e.xid}});
      } else {
        log::Info("XID event", {{"node", options_.node_name}, {"gpu", e.uuid}, {"xid", e.xid}});
      }
    }
    if (now >= next_probe) {
      next_probe = now + options_.health_probe_interval;
      for (const auto& g : Gpus()) {
        bool responds = backend_->Responds(g.uuid);
        std::lock_guard lock(mu_);
        bool was_unhealthy = health_.Unhealthy().contains(g.uuid);
        if (health_.OnProbe(g.uuid, responds, now)) {
          changed = true;
          log::Warn(was_unhealthy ? "GPU recovered" : "GPU unhealthy",
                    {{"node", options_.node_name}, {"gpu", g.uuid}});
        }
      }
      if (mps_ && mps_->Tick(now)) {  // runs the control program: outside mu_
        std::lock_guard lock(mu_);
        mps_unhealthy_ = mps_->Unhealthy();
        changed = true;
      }
    }
    if (changed) MarkChanged();
  }
}

uint64_t DevicePlugin::KubeletSocketId() const {
  struct stat st {};
  const std::string kubelet = JoinPath(options_.device_plugin_path, options_.kubelet_socket_name);
  if (::stat(kubelet.c_str(), &st) != 0) return 0;
  // Inode and change time together identify one incarnation of kubelet's socket.
  return (static_cast<uint64_t>(st.st_ino) << 20) ^ static_cast<uint64_t>(st.st_ctim.tv_sec) ^
         static_cast<uint64_t>(st.st_ctim.tv_nsec);
}

void DevicePlugin::WatchLoop() {
  uint64_t kubelet_id = KubeletSocketId();
  auto next_report = std::chrono::steady_clock::now() + options_.report_interval;
  bool need_register = false;
  bool last_report_failed = false;
  while (!stopping_) {
    {
      std::unique_lock lock(stop_mu_);
      stop_cv_.wait_for(lock, options_.kubelet_poll_interval);
    }
    if (stopping_) break;
    if (options_.serve_grpc && options_.register_with_kubelet) {
      // kubelet removes every plugin socket when it restarts and creates a new kubelet.sock.
      uint64_t id = KubeletSocketId();
      struct stat st {};
      bool ours_gone = ::stat(SocketPath().c_str(), &st) != 0;
      if (id != 0 && (id != kubelet_id || ours_gone)) need_register = true;
      if (need_register) {
        log::Info("kubelet restarted; re-registering", {{"node", options_.node_name}});
        if (ours_gone) {
          StopServer();
          Status s = StartServer();
          if (!s.ok()) log::Error("restart failed", {{"error", s.ToString()}});
        }
        Status s = RegisterWithKubelet();
        if (s.ok()) {
          need_register = false;
          kubelet_id = id;
          // A kubelet that found the node recreated zeroed every extended resource: put ours
          // back now rather than at the next periodic report.
          if (options_.advertise_extended_resources) next_report = std::chrono::steady_clock::now();
        } else {
          log::Warn("re-register failed", {{"error", s.ToString()}});
        }
      }
    }
    bool dirty;
    {
      std::lock_guard lock(mu_);
      dirty = reported_generation_ != generation_;
    }
    auto now = std::chrono::steady_clock::now();
    // After a failure, wait for the retry time even when dirty: the API server may be down.
    if ((dirty && !last_report_failed) || now >= next_report) {
      Status s = ReportInventory();
      last_report_failed = !s.ok();
      next_report = now + (s.ok() ? options_.report_interval : std::chrono::milliseconds(5000));
      if (!s.ok()) log::Warn("node report failed", {{"error", s.ToString()}});
    }
  }
}

}  // namespace vgpu::deviceplugin
