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

std::string ContainerDirPath(std::string_view vgpu_dir, const ContainerDirName& name) {
  return std::string(vgpu_dir) + "/" + std::string(kContainersFolder) + "/" +
         FormatContainerDirName(name);
}

Result<ContainerDirName> ContainerDirFromPath(std::string_view path) {
  const std::string folder = "/" + std::string(kContainersFolder) + "/";
  const size_t at = path.rfind(folder);
  if (at == std::string_view::npos) {
    return InvalidArgument("\"" + std::string(path) + "\" is not under a " + folder + " folder");
  }
  const std::string_view name = path.substr(at + folder.size());
  if (name.find('/') != std::string_view::npos) {
    return InvalidArgument("\"" + std::string(path) +
                           "\" names a path inside a container directory");
  }
  return ParseContainerDirName(name);
}

}  // namespace vgpu::codec
