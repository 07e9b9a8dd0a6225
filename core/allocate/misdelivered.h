#pragma once

// Answers kubelet gave to the wrong pod. kubelet's Allocate request names no pod, so the plugin
// infers it (core/allocate/pod_lookup.h). When a pod is bound and deleted at once, kubelet may
// still admit it and call Allocate; the plugin, no longer seeing the deleted pod, answers with the
// next pod's devices and marks that pod allocated. That pod's own Allocate then finds nothing and
// kubelet refuses it (UnexpectedAdmissionError). kubelet's device-manager checkpoint
// (core/codec/kubelet_checkpoint.h) records which pod every answer went to; every answer mounts its
// container's directory `<pod-uid>_<container>` (core/codec/container_dir.h), which names the pod
// it was written for. An answer written for pod P but held by another pod, with none held by P
// for that container, is owed to P: P's own Allocate gets it again.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/codec/container_dir.h"

namespace vgpu::allocate {

// One allocation kubelet holds, with the container our answer was written for (none when the
// answer mounts no container directory: another plugin, or HAMi's).
struct KubeletAnswer {
  std::string holder_uid;
  std::string holder_container;
  std::string resource;
  std::optional<codec::ContainerDirName> written_for;
};

struct OwedAnswer {
  std::string pod_uid;
  std::string container;
  std::string given_to_uid;  // the pod kubelet gave it to (for the log)
  friend bool operator==(const OwedAnswer&, const OwedAnswer&) = default;
};

// Answers for `resource` written for one pod's container and held by another pod, where no
// answer held by the pod it was written for covers that container. One per owed container, in
// the order of `answers`.
std::vector<OwedAnswer> MisdeliveredAnswers(const std::vector<KubeletAnswer>& answers,
                                            std::string_view resource);

}  // namespace vgpu::allocate
