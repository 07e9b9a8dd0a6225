#pragma once

// Whether LD_PRELOAD will put libvgpu.so into the command: `vgpu run` fails closed when it would
// not, since the command would then run with no limit at all. The loader ignores a preload it
// cannot load (one line on stderr, exit status untouched) and drops LD_PRELOAD for a
// set-user-ID, set-group-ID or file-capability program and everything it starts.

#include <string>
#include <vector>

#include "core/base/status.h"

namespace vgpu::run {

// The symbols a library must define itself to be taken for libvgpu.so: the hooks `vgpu run`
// relies on (memory, launches, initialisation) and the dlsym override that routes
// cuGetProcAddress users to them. libcuda.so defines the first three and not dlsym; libc defines
// dlsym and none of the others. HAMi-core's libvgpu.so, which reads the same contract, has all.
inline const std::vector<std::string>& PreloadMarkerSymbols() {
  static const std::vector<std::string> kSymbols = {"cuInit", "cuMemAlloc_v2", "cuLaunchKernel",
                                                    "dlsym"};
  return kSymbols;
}

// Loads `library` (RTLD_NOW, as the loader will) in a forked child and checks that it defines
// every PreloadMarkerSymbols() itself. Nothing of it runs in this process. The error says why:
// "not a loadable library: <dlerror>", "does not define cuInit: not libvgpu.so".
Status ProbePreloadLibrary(const std::string& library);

// The program execvp(3) would run for `argv0` under `path_env` ($PATH; "" means the default
// search path), or "" when none is found (execvp then reports it).
std::string ResolveCommand(const std::string& argv0, const std::string& path_env);

// FailedPrecondition when `program` runs with other credentials (set-user-ID or set-group-ID to
// someone other than the caller, or file capabilities): the loader then drops LD_PRELOAD.
Status CheckKeepsPreload(const std::string& program);

}  // namespace vgpu::run
