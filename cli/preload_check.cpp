#include "cli/preload_check.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/strings.h"

namespace vgpu::run {

namespace {

// In the child: what is wrong with the library, or "" when it is libvgpu.so.
std::string JudgeLoaded(const std::string& library) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    // dlerror names the file first ("<path>: cannot ..."); the caller names it already.
    const char* error = ::dlerror();
    std::string why = error != nullptr ? error : "dlopen failed";
    if (why.rfind(library + ": ", 0) == 0) why.erase(0, library.size() + 2);
    return "not a loadable library: " + why;
  }
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return "dlinfo failed";
  for (const std::string& symbol : PreloadMarkerSymbols()) {
    // dlsym on the handle also searches the library's dependencies (libc defines dlsym): the
    // symbol must be the library's own.
    void* address = ::dlsym(handle, symbol.c_str());
    Dl_info info{};
    if (address == nullptr || ::dladdr(address, &info) == 0 || info.dli_fname == nullptr ||
        std::strcmp(info.dli_fname, map->l_name) != 0) {
      return "does not define " + symbol + ": not libvgpu.so";
    }
  }
  return "";
}

}  // namespace

Status ProbePreloadLibrary(const std::string& library) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Internal(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    const std::string why = JudgeLoaded(library);
    (void)!::write(fds[1], why.data(), why.size());
    ::_exit(why.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string why;
  char buf[512];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || why.size() > 4096) break;
    why.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return FailedPrecondition(library + ": loading it killed a test process (signal " +
                              std::to_string(WTERMSIG(status)) + "): not libvgpu.so");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !why.empty()) {
    return FailedPrecondition(library + ": " + (why.empty() ? "cannot be loaded" : why));
  }
  return Status::Ok();
}

std::string ResolveCommand(const std::string& argv0, const std::string& path_env) {
  if (argv0.empty()) return "";
  if (argv0.find('/') != std::string::npos) return argv0;
  // execvp's default search path when PATH is unset (glibc: confstr(_CS_PATH)).
  const std::string search = path_env.empty() ? "/bin:/usr/bin" : path_env;
  for (std::string_view dir : Split(search, ':')) {
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + argv0;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

Status CheckKeepsPreload(const std::string& program) {
  struct stat st;
  if (program.empty() || ::stat(program.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return Status::Ok();  // execvp reports what is wrong with it
  }
  const std::string drops =
      ": the loader drops LD_PRELOAD for it and for everything it starts, so they would run "
      "without limits";
  if ((st.st_mode & S_ISUID) != 0 && st.st_uid != ::geteuid()) {
    return FailedPrecondition(
        program + " is set-user-ID (owner uid " + std::to_string(st.st_uid) + ")" + drops +
        "; switch users first, then vgpu run (e.g. sudo -u USER vgpu run ...)");
  }
  if ((st.st_mode & S_ISGID) != 0 && st.st_gid != ::getegid()) {
    return FailedPrecondition(program + " is set-group-ID (group " + std::to_string(st.st_gid) +
                              ")" + drops);
  }
  if (::getxattr(program.c_str(), "security.capability", nullptr, 0) > 0) {
    return FailedPrecondition(program + " has file capabilities (getcap)" + drops);
  }
  return Status::Ok();
}

}  // namespace vgpu::run
