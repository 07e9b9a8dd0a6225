#include "core/codec/container_dir.h"

namespace vgpu::codec {

std::string FormatContainerDirName(const ContainerDirName& name) {
  return name.pod_uid + "_" + name.container;
}

Result<ContainerDirName> ParseContainerDirName(std::string_view name) {
  const size_t sep = name.find('_');
  if (sep == std::string_view::npos) {
    return InvalidArgument("\"" + std::string(name) + "\" is not <pod-uid>_<container> (no '_')");
  }
  ContainerDirName out{std::string(name.substr(0, sep)), std::string(name.substr(sep + 1))};
  if (out.pod_uid.empty() || out.container.empty()) {
    return InvalidArgument("\"" + std::string(name) + "\" is not <pod-uid>_<container> (" +
                           (out.pod_uid.empty() ? "empty pod UID" : "empty container name") + ")");
  }
  return out;
}

}  // namespace vgpu::codec
