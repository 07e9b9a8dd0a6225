#pragma once

// kubelet's side of device-plugin registration, for tests that run the real vgpu-device-plugin
// binary: a Registration server on <device-plugin-path>/kubelet.sock that records every call.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api.grpc.pb.h"

namespace vgpu::deviceplugin {

// kubelet's side of registration: records every Register call.
class FakeRegistration final : public v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req,
                        v1beta1::Empty*) override {
    std::lock_guard l(mu_);
    requests_.push_back(*req);
    cv_.notify_all();
    return grpc::Status::OK;
  }
  // Waits (bounded, generous: this is not a latency assertion) for the n-th registration.
  std::optional<v1beta1::RegisterRequest> WaitFor(size_t n) {
    std::unique_lock l(mu_);
    if (!cv_.wait_for(l, std::chrono::seconds(60), [&] { return requests_.size() >= n; }))
      return std::nullopt;
    return requests_[n - 1];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1beta1::RegisterRequest> requests_;
};

class FakeKubelet {
 public:
  explicit FakeKubelet(const std::string& socket) : socket_(socket) { Start(); }
  ~FakeKubelet() { Stop(); }
  void Start() {
    grpc::ServerBuilder b;
    b.AddListeningPort("unix://" + socket_, grpc::InsecureServerCredentials());
    b.RegisterService(&registration);
    server_ = b.BuildAndStart();
  }
  void Stop() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
  }
  FakeRegistration registration;

 private:
  std::string socket_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace vgpu::deviceplugin
