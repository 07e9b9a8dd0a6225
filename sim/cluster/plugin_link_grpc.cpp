// The simulated kubelet's side of the device-plugin API over real unix sockets.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "api.grpc.pb.h"
#include "sim/cluster/plugin_link.h"

namespace vgpu::sim {

namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(10);

class GrpcLink : public PluginLink {
 public:
  explicit GrpcLink(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(v1beta1::DevicePlugin::NewStub(channel)) {}

  Result<std::vector<std::string>> Devices() override {
    // kubelet keeps the ListAndWatch stream open; the simulation only needs its first answer.
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kConnectTimeout);
    v1beta1::Empty empty;
    auto reader = stub_->ListAndWatch(&ctx, empty);
    v1beta1::ListAndWatchResponse first;
    if (!reader->Read(&first)) {
      return Unavailable("device plugin closed ListAndWatch before sending devices: " +
                         reader->Finish().error_message());
    }
    ctx.TryCancel();
    (void)reader->Finish();
    std::vector<std::string> ids;
    for (const v1beta1::Device& d : first.devices()) {
      if (d.health() == "Healthy") ids.push_back(d.id());
    }
    return ids;
  }

  Result<std::vector<ContainerEnv>> Allocate(
      const std::vector<std::vector<std::string>>& replicas) override {
    v1beta1::AllocateRequest req;
    for (const auto& container : replicas) {
      v1beta1::ContainerAllocateRequest* c = req.add_container_requests();
      for (const std::string& id : container) c->add_devices_ids(id);
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1beta1::AllocateResponse resp;
    const grpc::Status s = stub_->Allocate(&ctx, req, &resp);
    if (!s.ok()) return FailedPrecondition("Allocate: " + s.error_message());
    std::vector<ContainerEnv> out;
    for (const v1beta1::ContainerAllocateResponse& c : resp.container_responses()) {
      out.emplace_back(c.envs().begin(), c.envs().end());
    }
    return out;
  }

 private:
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub_;
};

class Endpoint : public GrpcKubeletEndpoint, public v1beta1::Registration::Service {
 public:
  explicit Endpoint(std::string dir) : dir_(std::move(dir)) {}
  ~Endpoint() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  Status Serve() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + dir_ + "/kubelet.sock", grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (!server_) return Unavailable("cannot serve the kubelet socket in " + dir_);
    return Status::Ok();
  }

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    if (req->version() != "v1beta1") {
      return {grpc::StatusCode::INVALID_ARGUMENT, "unsupported API version " + req->version()};
    }
    std::lock_guard lock(mu_);
    endpoint_ = req->endpoint();
    ++registrations_;
    cv_.notify_all();
    return grpc::Status::OK;
  }

  Result<std::unique_ptr<PluginLink>> Connect() override {
    std::string endpoint;
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, kConnectTimeout, [&] { return !endpoint_.empty(); })) {
        return DeadlineExceeded("the device plugin did not register with kubelet in " + dir_);
      }
      endpoint = endpoint_;
    }
    auto channel =
        grpc::CreateChannel("unix://" + dir_ + "/" + endpoint, grpc::InsecureChannelCredentials());
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + kConnectTimeout)) {
      return Unavailable("cannot connect to the device plugin at " + dir_ + "/" + endpoint);
    }
    return std::unique_ptr<PluginLink>(std::make_unique<GrpcLink>(channel));
  }

  int registrations() const override {
    std::lock_guard lock(mu_);
    return registrations_;
  }

 private:
  std::string dir_;
  std::unique_ptr<grpc::Server> server_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string endpoint_;
  int registrations_ = 0;
};

}  // namespace

Result<std::unique_ptr<GrpcKubeletEndpoint>> GrpcKubeletEndpoint::Start(const std::string& dir) {
  auto endpoint = std::make_unique<Endpoint>(dir);
  VGPU_RETURN_IF_ERROR(endpoint->Serve());
  return std::unique_ptr<GrpcKubeletEndpoint>(std::move(endpoint));
}

}  // namespace vgpu::sim
