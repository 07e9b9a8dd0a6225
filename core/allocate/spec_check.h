#pragma once

// Allocate hands a container no more than its own pod spec asks. The device list it consumes
// (`hami.io/vgpu-devices-to-allocate`) is an annotation, which anyone who may update the pod can
// rewrite between the bind and Allocate; the admission webhook refuses such updates, but not while
// it is down (failurePolicy: Ignore). A container's resources, by contrast, cannot change once the
// pod exists, and kubelet allocates by them. So every entry is checked against the container's
// ask, read the way the scheduler reads it (sched::ApplyDefaults with the defaults of the
// device-config.yaml both read), and refused when it grants more: a GPU count other than the
// ask's, more memory than the ask resolves to on that GPU, or a looser compute share.
// What it cannot tell: which of the node's GPUs the scheduler chose (docs/security.md §3).

#include <string>
#include <vector>

#include "core/allocate/container_entry.h"
#include "core/allocate/pod_view.h"
#include "core/base/status.h"
#include "core/codec/pod_resources.h"
#include "core/sched/pod_request.h"

namespace vgpu::allocate {

// How the scheduler reads a pod spec: resource names and defaults from device-config.yaml
// (`nvidia:` resource*Name, defaultMemory, defaultCores, defaultGPUNum).
struct SpecRules {
  codec::ResourceNames names;
  sched::RequestDefaults defaults;
};

// Checks `entry`, the devices granted to `container` of `pod`, against the container's ask.
// `node_gpus`: this node's GPUs and their registered memory (ValidateEntry has checked that every
// GPU of the entry is one of them). Errors name the container, the GPU and both values.
Status CheckEntryAgainstSpec(const std::vector<GrantedDevice>& entry, const PodView& pod,
                             const ContainerView& container, const sched::RequestDefaults& defaults,
                             const NodeGpuMemory& node_gpus);

}  // namespace vgpu::allocate
