#pragma once

// The name of a container's directory under <vgpu_dir>/containers: the device plugin writes
// `<pod-uid>_<container>` (hami-compat §5) and mounts it into the container; the monitor reads the
// directories back, and the device plugin reads the name out of kubelet's record of its answers
// (core/allocate/misdelivered.h). Pod UIDs hold no '_', container names may, so the name splits at
// the first '_' (HAMi's monitor does the same).

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::codec {

struct ContainerDirName {
  std::string pod_uid;
  std::string container;
  friend bool operator==(const ContainerDirName&, const ContainerDirName&) = default;
};

// `<pod-uid>_<container>`.
std::string FormatContainerDirName(const ContainerDirName& name);

// InvalidArgument (naming the problem) for a name without '_' or with an empty part.
Result<ContainerDirName> ParseContainerDirName(std::string_view name);

// The folder under <vgpu_dir> that holds the containers' directories.
inline constexpr std::string_view kContainersFolder = "containers";

// `<vgpu_dir>/containers/<pod-uid>_<container>`.
std::string ContainerDirPath(std::string_view vgpu_dir, const ContainerDirName& name);

// The container a path of that form names (any <vgpu_dir>); InvalidArgument otherwise.
Result<ContainerDirName> ContainerDirFromPath(std::string_view path);

}  // namespace vgpu::codec
