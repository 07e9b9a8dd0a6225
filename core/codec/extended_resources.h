#pragma once

// GPU memory and cores as node extended resources (vgpu-device-plugin
// --advertise-extended-resources, HAMi #261): the node's vGPU memory and cores written into the
// Node's status.capacity, so that what reads node capacity sees them (kubectl describe node,
// kube-state-metrics, autoscalers, kubelet's admission). The scheduler does not read them: it
// places vGPUs per card from the inventory annotation. docs/scheduler.md "Extended resources"
// gives the trade-off.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/codec/node_inventory.h"
#include "core/codec/pod_resources.h"

namespace vgpu::codec {

// vgpu's own node annotation (kept here, beside its value's codec, rather than in annotations.h
// with HAMi's contract): the extended resources this node's device plugin put into the Node's
// status.capacity, so that it removes those, and only those, once the option is off or a name
// changed.
inline constexpr std::string_view kExtendedResourcesAnnotation = "vgpu.io/extended-resources";

// Resource name -> whole-number quantity.
using ExtendedCapacity = std::map<std::string, int64_t>;

// Refuses names that cannot be advertised this way, naming the name and what is wrong: not an
// extended resource name as Kubernetes defines one (<domain>/<name>, outside kubernetes.io, not
// requests.*), the same name for memory and cores, or the count name (kubelet's device manager
// owns that one and would overwrite it).
Status CheckExtendedResourceNames(const ResourceNames& names);

// What the node advertises: names.memory = the sum of `devmem` (MiB, memory scaling applied, as
// the inventory registers it) and names.cores = the sum of `devcore` (100 x core scaling) over
// the healthy GPUs. Registered figures, not physical ones: the scheduler fills GPUs up to them,
// and kubelet's admission must never refuse a pod the scheduler placed (docs/scheduler.md).
// No healthy GPU gives 0, not an absent entry: an absent one would let kubelet admit any ask.
ExtendedCapacity ExtendedResourceCapacity(const NodeInventory& inventory,
                                          const ResourceNames& names);

// JSON merge patch (RFC 7386) for the Node's status subresource: sets each of `advertise` in
// status.capacity (kubelet derives status.allocatable from it on its next status update) and
// removes each of `withdraw` from status.capacity and status.allocatable (kubelet would drop the
// allocatable one too, but not while it is down). Touches nothing else, so kubelet's conditions,
// addresses and its own capacity entries stay as they are.
nlohmann::json ExtendedResourceStatusPatch(const ExtendedCapacity& advertise,
                                           const std::set<std::string>& withdraw);

// The value of kExtendedResourcesAnnotation: the names this node's device plugin put into
// status.capacity, sorted, comma-separated. Decoding ignores blanks and surrounding spaces.
std::string EncodeAdvertisedNames(const std::set<std::string>& names);
std::set<std::string> DecodeAdvertisedNames(std::string_view value);

}  // namespace vgpu::codec
