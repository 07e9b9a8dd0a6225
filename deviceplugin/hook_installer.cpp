#include "deviceplugin/hook_installer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/codec/container_dir.h"

namespace vgpu::deviceplugin {
namespace fs = std::filesystem;

namespace {

Status MakeDirs(const std::string& dir, bool world_writable) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return Internal("cannot create directory " + dir + ": " + ec.message());
  }
  if (world_writable) {
    // Containers of any user share this directory, like /tmp: sticky, so that a tenant can neither
    // delete nor replace (with a link to a host file) another tenant's files in it. HAMi makes it
    // 0777, which lets any container swap the GPU files the others open.
    if (::chmod(dir.c_str(), 01777) != 0) {
      return Internal("cannot chmod 1777 " + dir + ": " + std::generic_category().message(errno));
    }
  }
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& content, unsigned mode) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return Internal("cannot create " + tmp + ": " + std::generic_category().message(errno));
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return Internal("cannot write " + tmp + ": " + std::generic_category().message(err));
    }
    done += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);  // O_CREAT's mode is filtered by the umask
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    return Internal("cannot flush " + tmp + ": " + std::generic_category().message(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return Internal("cannot rename " + tmp + " to " + path + ": " +
                    std::generic_category().message(err));
  }
  return Status::Ok();
}

Status InstallHook(const HookLayout& layout, const std::string& libvgpu_source,
                   const std::string& lock_dir) {
  VGPU_RETURN_IF_ERROR(MakeDirs(layout.VgpuDir(), false));
  VGPU_RETURN_IF_ERROR(MakeDirs(layout.ContainersDir(), false));
  if (!lock_dir.empty()) {
    VGPU_RETURN_IF_ERROR(MakeDirs(lock_dir, true));
  }
  if (!libvgpu_source.empty()) {
    std::ifstream in(libvgpu_source, std::ios::binary);
    if (!in) {
      return NotFound("--libvgpu " + libvgpu_source +
                      " cannot be read; point it at the built libvgpu.so");
    }
    std::ostringstream data;
    data << in.rdbuf();
    VGPU_RETURN_IF_ERROR(WriteFileAtomically(layout.LibraryFile(), data.str(), 0755));
  }
  // Inside a container the library is mounted at <hook>/vgpu/libvgpu.so (unversioned).
  return WriteFileAtomically(layout.PreloadFile(), layout.VgpuDir() + "/libvgpu.so\n", 0644);
}

Status EnsureContainerDir(const HookLayout& layout, const std::string& pod_uid,
                          const std::string& container) {
  if (pod_uid.empty() || container.empty() || container.find('/') != std::string::npos ||
      pod_uid.find('/') != std::string::npos) {
    return InvalidArgument("pod uid '" + pod_uid + "' / container '" + container +
                           "' cannot name a host directory");
  }
  return MakeDirs(codec::ContainerDirPath(layout.VgpuDir(), {pod_uid, container}), true);
}

}  // namespace vgpu::deviceplugin
