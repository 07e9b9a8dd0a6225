#pragma once

// Reads kubelet's device-manager checkpoint (`kubelet_internal_checkpoint` beside kubelet.sock)
// into the answers kubelet holds, each with the container our answer was written for (the
// `<vgpu_dir>/containers/<pod-uid>_<container>` mount of core/allocate/container_response.h).
// Used to find answers kubelet gave to another pod (core/allocate/misdelivered.h).

#include <string>
#include <vector>

#include "core/allocate/misdelivered.h"
#include "core/base/status.h"

namespace vgpu::deviceplugin {

inline constexpr const char* kKubeletCheckpointName = "kubelet_internal_checkpoint";

// Every entry of the checkpoint at `path`; an absent file is no entries (kubelet has allocated
// nothing yet). An entry whose answer is not a ContainerAllocateResponse, or mounts no container
// directory, has no `written_for`.
Result<std::vector<allocate::KubeletAnswer>> ReadKubeletAnswers(const std::string& path);

}  // namespace vgpu::deviceplugin
