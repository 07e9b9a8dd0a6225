#pragma once

// The name of a container's directory under <vgpu_dir>/containers: the device plugin writes
// `<pod-uid>_<container>` (hami-compat §5). Pod UIDs hold no '_', container names may, so the name
// splits at the first '_' (HAMi's monitor does the same).

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::monitor {

struct ContainerDirName {
  std::string pod_uid;
  std::string container;
  friend bool operator==(const ContainerDirName&, const ContainerDirName&) = default;
};

// InvalidArgument (naming the problem) for a name without '_' or with an empty part.
Result<ContainerDirName> ParseContainerDirName(std::string_view name);

}  // namespace vgpu::monitor
