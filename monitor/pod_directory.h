#pragma once

// Who a container directory belongs to. The device plugin names each container's directory
// `<pod-uid>_<container>` (hami-compat §5); the monitor needs the pod's namespace and name for its
// metrics, and whether the pod still exists before it removes a directory.

#include <optional>
#include <string>

namespace vgpu::monitor {

struct PodIdentity {
  std::string namespace_name;
  std::string name;
  std::string uid;
};

class PodDirectory {
 public:
  virtual ~PodDirectory() = default;
  // The pod with this UID on this node, if it exists now.
  virtual std::optional<PodIdentity> Find(const std::string& uid) const = 0;
  // Whether the directory has heard from the API server recently enough that a pod missing from
  // it is really gone (a directory is never removed on the word of a stale or failing view).
  virtual bool Synced() const = 0;
};

}  // namespace vgpu::monitor
