#pragma once

// Asks kubelet which pods it knows and which of their containers hold devices, over its
// pod-resources API (List, v1; `<kubelet root>/pod-resources/kubelet.sock`). kubelet adds a pod
// to that list just before admitting it, so during an Allocate call the pod the call is for is
// listed without devices (core/allocate/pod_lookup.h, FindAdmittedTarget).

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/allocate/pod_lookup.h"
#include "core/base/status.h"

namespace vgpu::deviceplugin {

inline constexpr const char* kDefaultPodResourcesSocket =
    "/var/lib/kubelet/pod-resources/kubelet.sock";

class KubeletPodLister {
 public:
  // `socket`: the pod-resources socket path; `resource`: the resource whose devices count
  // (`nvidia.com/gpu`). The connection is made on the first call and kept (gRPC reconnects
  // after a kubelet restart).
  KubeletPodLister(std::string socket, std::string resource,
                   std::chrono::milliseconds timeout = std::chrono::seconds(3));
  ~KubeletPodLister();
  KubeletPodLister(const KubeletPodLister&) = delete;
  KubeletPodLister& operator=(const KubeletPodLister&) = delete;

  // Every pod kubelet lists, `unserved` when some container of it holds no device of the
  // resource. Unavailable (naming the socket) when kubelet does not answer in time.
  Result<std::vector<allocate::KubeletPod>> List();

 private:
  struct Impl;
  std::string socket_;
  std::string resource_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vgpu::deviceplugin
