#include "deviceplugin/mps_daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "core/base/log.h"
#include "vgpu/env_contract.h"

extern char** environ;

namespace vgpu::deviceplugin {
namespace {

// Closes a descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

class FileActions {
 public:
  FileActions() { ::posix_spawn_file_actions_init(&fa_); }
  ~FileActions() { ::posix_spawn_file_actions_destroy(&fa_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &fa_; }

 private:
  posix_spawn_file_actions_t fa_;
};

// The children RunCommand is waiting for: ReapOrphans leaves them to it. Spawning and adding the
// pid happen under the lock, so the reaper never sees a RunCommand child it does not know.
std::mutex g_children_mu;
std::set<pid_t> g_awaited;

// Takes a RunCommand child off the list once RunCommand has reaped it.
class Awaited {
 public:
  explicit Awaited(pid_t pid) : pid_(pid) {}
  ~Awaited() {
    std::lock_guard lock(g_children_mu);
    g_awaited.erase(pid_);
  }
  Awaited(const Awaited&) = delete;
  Awaited& operator=(const Awaited&) = delete;

 private:
  pid_t pid_;
};

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// Creates `path` (and its parents) and sets exactly `mode`, whatever the umask or an earlier run
// left: the modes are the access rules of docs/mps.md.
Status MakeDir(const std::string& path, mode_t mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Unavailable("cannot create MPS directory " + path + ": " + ec.message());
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return Unavailable(Errno("cannot stat " + path));
  if (!S_ISDIR(st.st_mode)) {
    return FailedPrecondition("MPS path " + path + " exists and is not a directory (remove it)");
  }
  if (::chmod(path.c_str(), mode) != 0) return Unavailable(Errno("cannot chmod " + path));
  return Status::Ok();
}

}  // namespace

Result<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& input, std::chrono::milliseconds timeout,
                                 bool capture) {
  if (argv.empty()) return InvalidArgument("no program to run");
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const std::string key(kv.substr(0, kv.find('=')));
    if (env.count(key) == 0) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : env) {
    std::string kv = k;
    kv += '=';
    kv += v;
    env_strings.push_back(std::move(kv));
  }
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  argp.reserve(args.size() + 1);
  for (std::string& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  // stdin is a socket pair, not a pipe: a program that exits before reading it (the control
  // program does when no daemon listens) must not kill this process with SIGPIPE, and send()
  // can say MSG_NOSIGNAL where write() on a pipe cannot.
  int in_pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_pair) != 0) {
    return Unavailable(Errno("socketpair"));
  }
  Fd in_read(in_pair[0]), in_write(in_pair[1]);
  int out_pipe[2] = {-1, -1};
  if (capture && ::pipe2(out_pipe, O_CLOEXEC) != 0) return Unavailable(Errno("pipe"));
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);

  FileActions fa;
  ::posix_spawn_file_actions_adddup2(fa.get(), in_read.get(), 0);
  if (capture) {
    ::posix_spawn_file_actions_adddup2(fa.get(), out_write.get(), 1);
    ::posix_spawn_file_actions_adddup2(fa.get(), out_write.get(), 2);
  } else {
    ::posix_spawn_file_actions_addopen(fa.get(), 1, "/dev/null", O_WRONLY, 0);
    ::posix_spawn_file_actions_addopen(fa.get(), 2, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  int rc = 0;
  {
    std::lock_guard lock(g_children_mu);
    rc = ::posix_spawnp(&pid, argp[0], fa.get(), nullptr, argp.data(), envp.data());
    if (rc == 0) g_awaited.insert(pid);
  }
  if (rc != 0) {
    return Unavailable("cannot run " + argv[0] + ": " + std::strerror(rc) +
                       " (is it installed, or in PATH?)");
  }
  const Awaited awaited(pid);
  in_read.Reset();
  out_write.Reset();
  // Commands are a few bytes: the socket buffer takes them; never block on a program that does
  // not read.
  if (!input.empty()) {
    const ssize_t w =
        ::send(in_write.get(), input.data(), input.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;  // a program that exits without reading stdin is judged by its exit status
  }
  in_write.Reset();

  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  bool exited = false;
  char buf[4096];
  while (!exited) {
    if (capture && out_read.get() >= 0) {
      pollfd p{out_read.get(), POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) {
        const ssize_t n = ::read(out_read.get(), buf, sizeof buf);
        if (n > 0) {
          if (result.output.size() < 65536) result.output.append(buf, static_cast<size_t>(n));
        } else {
          out_read.Reset();  // EOF
        }
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      exited = true;
    } else if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      result.exit_code = -1;
      result.output += "\n(killed after " + std::to_string(timeout.count()) + " ms)";
      return result;
    }
  }
  if (capture && out_read.get() >= 0) {
    // What it wrote just before exiting; a child it left behind may hold the pipe, so no wait.
    ::fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
    ssize_t n = 0;
    while ((n = ::read(out_read.get(), buf, sizeof buf)) > 0 && result.output.size() < 65536) {
      result.output.append(buf, static_cast<size_t>(n));
    }
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

int ReapOrphans() {
  std::lock_guard lock(g_children_mu);
  int reaped = 0;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT: look first; a RunCommand child is its own to reap (it does within milliseconds, and
    // the orphans behind it wait for the next round).
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) break;
    if (g_awaited.contains(info.si_pid)) break;
    if (::waitpid(info.si_pid, nullptr, WNOHANG) != info.si_pid) break;
    ++reaped;
  }
  return reaped;
}

MpsSupervisor::MpsSupervisor(MpsOptions options, std::vector<std::string> gpu_uuids)
    : options_(std::move(options)), uuids_(std::move(gpu_uuids)) {}

MpsSupervisor::~MpsSupervisor() {
  StopAll();
}

std::map<std::string, std::string> MpsSupervisor::EnvFor(const Gpu& g) const {
  return {{VGPU_ENV_VISIBLE_DEVICES, g.uuid},
          {VGPU_ENV_MPS_PIPE_DIRECTORY, g.dirs.pipe},
          {VGPU_ENV_MPS_LOG_DIRECTORY, g.dirs.log}};
}

bool MpsSupervisor::Alive(const Gpu& g) const {
  auto r = RunCommand({options_.control}, EnvFor(g), "get_server_list\n", options_.command_timeout,
                      true);
  return r.ok() && r->exit_code == 0;
}

bool MpsSupervisor::StartOne(const Gpu& g) const {
  auto r = RunCommand({options_.control, "-d"}, EnvFor(g), "", options_.command_timeout, false);
  if (!r.ok()) {
    log::Error("MPS control daemon not started",
               {{"gpu", g.uuid}, {"error", r.status().ToString()}});
    return false;
  }
  if (r->exit_code != 0) {
    log::Error("MPS control daemon not started",
               {{"gpu", g.uuid},
                {"exit", r->exit_code},
                {"log", g.dirs.log + "/control.log"},
                {"hint",
                 "a daemon another process started on this pipe directory, or the GPU "
                 "is in a compute mode MPS cannot use"}});
    return false;
  }
  // -d returns once the daemon forked; it must answer before clients are sent to it.
  if (!Alive(g)) {
    log::Error("MPS control daemon started but does not answer",
               {{"gpu", g.uuid}, {"log", g.dirs.log + "/control.log"}});
    return false;
  }
  return true;
}

Status MpsSupervisor::Start(Clock::time_point now) {
  std::vector<Gpu> gpus;
  gpus.reserve(uuids_.size());
  for (const std::string& uuid : uuids_) {
    Result<allocate::MpsDirs> dirs = allocate::MpsDirsFor(options_.root, uuid);
    if (!dirs.ok()) return dirs.status().WithContext("--mps-dir");
    gpus.push_back({uuid, *dirs, {}});
  }
  // Root and each GPU's directory: root's alone, so that no other local user reaches a pipe
  // directory through them (pods get theirs bind-mounted). Pipe directories and shm/ are open to
  // every UID, as /tmp is: the UID a pod runs as is its own choice.
  VGPU_RETURN_IF_ERROR(MakeDir(options_.root, 0700));
  for (const Gpu& g : gpus) {
    VGPU_RETURN_IF_ERROR(MakeDir(g.dirs.gpu, 0700));
    VGPU_RETURN_IF_ERROR(MakeDir(g.dirs.pipe, 01777));
    VGPU_RETURN_IF_ERROR(MakeDir(g.dirs.log, 0700));
  }
  if (!gpus.empty()) VGPU_RETURN_IF_ERROR(MakeDir(gpus.front().dirs.shm, 01777));
  for (Gpu& g : gpus) {
    // A daemon a previous run of the plugin left is adopted rather than started twice.
    const bool ok = Alive(g) || StartOne(g);
    MpsOnStart(g.state, ok, now, options_.backoff);
    log::Info(ok ? "MPS control daemon up" : "MPS GPU unhealthy until its daemon starts",
              {{"gpu", g.uuid}, {"pipe", g.dirs.pipe}});
  }
  std::lock_guard lock(mu_);
  gpus_ = std::move(gpus);
  stopped_ = false;
  return Status::Ok();
}

bool MpsSupervisor::Tick(Clock::time_point now) {
  if (const int reaped = ReapOrphans(); reaped > 0) {
    log::VInfo(2, "reaped exited MPS processes", {{"count", reaped}});
  }
  std::vector<Gpu> snapshot;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return false;
    snapshot = gpus_;
  }
  bool changed = false;
  for (Gpu& g : snapshot) {
    const bool was_healthy = g.state.healthy();
    if (g.state.up) {
      if (MpsOnCheck(g.state, Alive(g), now, options_.backoff)) {
        log::Warn("MPS control daemon gone: GPU unhealthy until it is back",
                  {{"gpu", g.uuid},
                   {"failures", g.state.failures},
                   {"retry_in_ms", MpsRestartDelay(g.state.failures, options_.backoff).count()}});
      }
    }
    if (MpsStartDue(g.state, now)) {
      const bool ok = StartOne(g);
      MpsOnStart(g.state, ok, now, options_.backoff);
      if (ok) {
        log::Info("MPS control daemon restarted", {{"gpu", g.uuid}});
      } else {
        log::Warn("MPS control daemon restart failed",
                  {{"gpu", g.uuid},
                   {"failures", g.state.failures},
                   {"retry_in_ms", MpsRestartDelay(g.state.failures, options_.backoff).count()}});
      }
    }
    // A daemon found dead and restarted within the same round changes nothing kubelet sees.
    if (g.state.healthy() != was_healthy) changed = true;
  }
  std::lock_guard lock(mu_);
  if (!stopped_) gpus_ = std::move(snapshot);
  return changed;
}

std::set<std::string> MpsSupervisor::Unhealthy() const {
  std::lock_guard lock(mu_);
  std::set<std::string> out;
  for (const Gpu& g : gpus_) {
    if (!g.state.healthy()) out.insert(g.uuid);
  }
  return out;
}

void MpsSupervisor::StopAll() {
  std::vector<Gpu> gpus;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    gpus = gpus_;
  }
  for (const Gpu& g : gpus) {
    auto r = RunCommand({options_.control}, EnvFor(g), "quit\n", options_.command_timeout, true);
    if (!r.ok() || r->exit_code != 0) {
      log::Warn("MPS control daemon did not take quit",
                {{"gpu", g.uuid}, {"error", r.ok() ? r->output : r.status().ToString()}});
    } else {
      log::Info("MPS control daemon stopped", {{"gpu", g.uuid}});
    }
  }
}

}  // namespace vgpu::deviceplugin
