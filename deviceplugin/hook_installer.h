#pragma once

// Puts libvgpu.so and ld.so.preload into the hook path at start, as Allocate's mounts expect
// (hami-compat §5). Files are written to a temporary name and renamed into place: a running
// container may have the old library mapped, and rename never changes the file it maps.

#include <string>

#include "core/base/status.h"
#include "core/codec/container_dir.h"
#include "vgpu/env_contract.h"

namespace vgpu::deviceplugin {

struct HookLayout {
  std::string hook_path = VGPU_DEFAULT_HOOK_PATH;
  std::string version;  // libvgpu.so.<version>

  std::string VgpuDir() const { return hook_path + "/vgpu"; }
  std::string LibraryFile() const { return VgpuDir() + "/libvgpu.so." + version; }
  std::string PreloadFile() const { return VgpuDir() + "/ld.so.preload"; }
  std::string ContainersDir() const {
    return VgpuDir() + "/" + std::string(codec::kContainersFolder);
  }
};

// Installs `libvgpu_source` as <hook>/vgpu/libvgpu.so.<version> (skipped when `libvgpu_source` is
// empty) and writes ld.so.preload naming the library's path inside containers. Also creates the
// containers directory and /tmp/vgpulock-style lock directory `lock_dir` (mode 1777, sticky).
Status InstallHook(const HookLayout& layout, const std::string& libvgpu_source,
                   const std::string& lock_dir = VGPU_DEFAULT_LOCK_DIR);

// <hook>/vgpu/containers/<podUID>_<container>: the container's shared region directory.
Status EnsureContainerDir(const HookLayout& layout, const std::string& pod_uid,
                          const std::string& container);

// Writes `content` to `path` through a temporary file in the same directory and rename(2).
Status WriteFileAtomically(const std::string& path, const std::string& content, unsigned mode);

}  // namespace vgpu::deviceplugin
