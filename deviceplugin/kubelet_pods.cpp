#include "deviceplugin/kubelet_pods.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>

#include "podresources.grpc.pb.h"

namespace vgpu::deviceplugin {

struct KubeletPodLister::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
};

KubeletPodLister::KubeletPodLister(std::string socket, std::string resource,
                                   std::chrono::milliseconds timeout)
    : socket_(std::move(socket)),
      resource_(std::move(resource)),
      timeout_(timeout),
      impl_(std::make_unique<Impl>()) {}

KubeletPodLister::~KubeletPodLister() = default;

Result<std::vector<allocate::KubeletPod>> KubeletPodLister::List() {
  // No socket, no call: gRPC would retry the connection with backoff, and every Allocate of a
  // node without the socket mounted would wait for that (a second and more).
  struct stat st {};
  if (stat(socket_.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return Unavailable("kubelet's pod-resources socket " + socket_ +
                       " is not there (mount kubelet's pod-resources folder, or pass "
                       "--pod-resources-socket=\"\" to not ask)");
  }
  if (!impl_->stub) {
    impl_->channel = grpc::CreateChannel("unix://" + socket_, grpc::InsecureChannelCredentials());
    impl_->stub = v1::PodResourcesLister::NewStub(impl_->channel);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout_);
  v1::ListPodResourcesRequest req;
  v1::ListPodResourcesResponse resp;
  grpc::Status s = impl_->stub->List(&ctx, req, &resp);
  if (!s.ok()) {
    return Unavailable("kubelet's pod-resources API at " + socket_ + " did not answer List: " +
                       s.error_message() + " (code " + std::to_string(s.error_code()) +
                       "; is the socket mounted, and is kubelet 1.20 or newer?)");
  }
  std::vector<allocate::KubeletPod> pods;
  pods.reserve(static_cast<size_t>(resp.pod_resources_size()));
  for (const v1::PodResources& p : resp.pod_resources()) {
    const bool unserved =
        std::any_of(p.containers().begin(), p.containers().end(), [&](const auto& c) {
          return std::none_of(c.devices().begin(), c.devices().end(), [&](const auto& d) {
            return d.resource_name() == resource_ && d.device_ids_size() > 0;
          });
        });
    pods.push_back({p.namespace_(), p.name(), unserved});
  }
  return pods;
}

}  // namespace vgpu::deviceplugin
