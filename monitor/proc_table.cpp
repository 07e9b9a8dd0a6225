#include "monitor/proc_table.h"

#include <dirent.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <system_error>

#include "core/base/strings.h"
#include "core/monitor/proc_parse.h"
#include "monitor/unique_fd.h"

namespace vgpu::monitor {
namespace {

constexpr size_t kSmallFileLimit = size_t{64} << 10;
constexpr size_t kMapsLimit = size_t{256} << 20;

// A whole /proc file (they report size 0, so read until the end), up to `limit` bytes.
std::optional<std::string> ReadProcFile(int dir_fd, const char* name, size_t limit) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  std::string text;
  char buf[8192];
  while (text.size() < limit) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

class ProcfsSource : public HostProcessSource {
 public:
  explicit ProcfsSource(std::string root) : root_(std::move(root)) {}

  Result<std::vector<HostProcess>> Scan(const ProcScanRequest& request) override {
    DIR* dir = ::opendir(root_.c_str());
    if (dir == nullptr) {
      return Unavailable("cannot read " + root_ + ": " + std::system_category().message(errno));
    }
    std::vector<HostProcess> out;
    int readable = 0;
    while (const dirent* e = ::readdir(dir)) {
      auto pid = ParseInt<int32_t>(e->d_name);
      if (!pid || *pid <= 0) continue;
      UniqueFd pid_dir(::openat(::dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!pid_dir.valid()) continue;  // exited meanwhile
      auto status = ReadProcFile(pid_dir.get(), "status", kSmallFileLimit);
      if (!status) continue;
      ++readable;
      auto ns_pids = ParseNsPids(*status);
      if (!ns_pids || !request.ns_pids.contains(ns_pids->back())) continue;
      auto stat = ReadProcFile(pid_dir.get(), "stat", kSmallFileLimit);
      auto start = stat ? ParseStatStartTime(*stat) : std::nullopt;
      if (!start) continue;
      HostProcess p;
      p.host_pid = *pid;
      p.ns_pids = std::move(*ns_pids);
      p.start_time = *start;
      // Reading another process's maps needs ptrace access (root, or CAP_SYS_PTRACE).
      if (auto maps = ReadProcFile(pid_dir.get(), "maps", kMapsLimit)) {
        p.maps_read = true;
        for (const FileId& id : ParseMappedFiles(*maps)) {
          if (request.regions.contains(id)) p.mapped.push_back(id);
        }
      } else if (!ReadProcFile(pid_dir.get(), "stat", kSmallFileLimit)) {
        continue;  // it exited: not a process whose maps are unknown
      }
      out.push_back(std::move(p));
    }
    (void)::closedir(dir);
    if (readable == 0) return Unavailable("no process of " + root_ + " could be read");
    return out;
  }

  Result<std::optional<HostStat>> Stat(int32_t host_pid) override {
    const std::string path = root_ + "/" + std::to_string(host_pid) + "/stat";
    UniqueFd fd(::openat(AT_FDCWD, path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) {
      if (errno == ENOENT || errno == ESRCH) return std::optional<HostStat>();
      return Unavailable("cannot read " + path + ": " + std::system_category().message(errno));
    }
    char buf[4096];  // a stat line is well under 1 KiB
    ssize_t n = 0;
    do {
      n = ::read(fd.get(), buf, sizeof buf);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == ESRCH) return std::optional<HostStat>();  // exited after the open
    if (n <= 0) return Unavailable("cannot read " + path);
    const std::string_view text(buf, static_cast<size_t>(n));
    auto state = ParseStatState(text);
    auto start = ParseStatStartTime(text);
    if (!state || !start) return Unavailable("cannot parse " + path);
    return std::optional<HostStat>(HostStat{*state, *start});
  }

 private:
  std::string root_;
};

}  // namespace

Result<std::optional<HostStat>> HostProcessSource::Stat(int32_t /*host_pid*/) {
  return FailedPrecondition("this source of host processes cannot read one process");
}

std::unique_ptr<HostProcessSource> NewProcfsSource(std::string proc_root) {
  return std::make_unique<ProcfsSource>(std::move(proc_root));
}

}  // namespace vgpu::monitor
