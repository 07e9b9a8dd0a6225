#include "cli/run_mps.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "cli/run_files.h"
#include "mps_probe.h"
#include "vgpu/env_contract.h"

extern char** environ;

namespace vgpu::run {
namespace {

constexpr auto kStartWait = std::chrono::seconds(10);
constexpr auto kPoll = std::chrono::milliseconds(50);

std::string Parent(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// A directory the run may use: created 0700 when missing; then a real directory (no link), owned
// by the caller or root, writable by nobody else (JudgeDirectory's rule, sticky bit refused too:
// the daemon's sockets are entries anyone could otherwise plant).
Status PrepareDirectory(const std::string& path, uint32_t uid) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return FailedPrecondition(Errno("cannot create " + path));
  }
  auto facts = LstatFacts(path);
  if (!facts.ok()) return facts.status();
  if (Status judged = JudgeDirectory(path, *facts, uid); !judged.ok()) return judged;
  if ((facts->mode & 022) != 0) {
    return PermissionDenied(path +
                            " is writable by other users; the MPS daemon's pipe directory "
                            "must be writable only by its owner (chmod go-w " +
                            path + ")");
  }
  return Status::Ok();
}

// Runs `program -d` (the control daemon forks itself away and the call returns) with the MPS
// directories set and no preload: the daemon and the server it spawns must not run under libvgpu.
Status StartDaemon(const std::string& program, const std::string& pipe_dir,
                   const std::string& log_dir) {
  const pid_t pid = ::fork();
  if (pid < 0) return Internal(Errno("fork"));
  if (pid == 0) {
    ::unsetenv("LD_PRELOAD");
    ::unsetenv(VGPU_ENV_SHARING_MODE);
    ::setenv(VGPU_ENV_MPS_PIPE_DIRECTORY, pipe_dir.c_str(), 1);
    ::setenv(VGPU_ENV_MPS_LOG_DIRECTORY, log_dir.c_str(), 1);
    const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd >= 0) (void)::dup2(null_fd, STDIN_FILENO);
    char* argv[] = {const_cast<char*>(program.c_str()), const_cast<char*>("-d"), nullptr};
    ::execv(program.c_str(), argv);
    _exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return FailedPrecondition(program + " -d failed (" +
                              (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                                 : std::string("killed")) +
                              "); its log is in " + log_dir);
  }
  return Status::Ok();
}

}  // namespace

std::string MpsPipeDirectory(const std::string& flag, const std::string& env_value, uint32_t uid) {
  if (!flag.empty()) return flag;
  if (!env_value.empty()) return env_value;
  return "/tmp/vgpu-mps-" + std::to_string(uid) + "/pipe";
}

bool MpsDaemonAnswers(const std::string& pipe_dir) {
  return !pipe_dir.empty() && vgpu_mps_daemon_answers(pipe_dir.c_str()) == 1;
}

Status EnsureMpsDaemon(const std::string& pipe_dir, uint32_t uid,
                       const std::string& control_program, std::ostream& note) {
  if (pipe_dir.empty() || pipe_dir.front() != '/') {
    return InvalidArgument("MPS pipe directory " + pipe_dir + ": must be an absolute path");
  }
  // The parent holds the pipe and log directories and the start lock; its own parents must not
  // let anyone swap it (CheckDirectories).
  const std::string base = Parent(pipe_dir);
  if (Status dirs = CheckDirectories(Parent(base), uid); !dirs.ok()) return dirs;
  if (Status made = PrepareDirectory(base, uid); !made.ok()) return made;
  if (Status made = PrepareDirectory(pipe_dir, uid); !made.ok()) return made;
  if (MpsDaemonAnswers(pipe_dir)) return Status::Ok();

  const std::string log_dir = base + "/log";
  if (Status made = PrepareDirectory(log_dir, uid); !made.ok()) return made;
  const std::string lock_path = base + "/start.lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock < 0) return FailedPrecondition(Errno("cannot open " + lock_path));
  while (::flock(lock, LOCK_EX) != 0 && errno == EINTR) {
  }
  Status result = Status::Ok();
  if (!MpsDaemonAnswers(pipe_dir)) {  // another run may have started it meanwhile
    if (control_program.empty()) {
      result = NotFound(
          "MPS mode needs nvidia-cuda-mps-control (installed with the NVIDIA driver) on PATH");
    } else {
      result = StartDaemon(control_program, pipe_dir, log_dir);
      const auto deadline = std::chrono::steady_clock::now() + kStartWait;
      while (result.ok() && !MpsDaemonAnswers(pipe_dir)) {
        if (std::chrono::steady_clock::now() > deadline) {
          std::string message = "the MPS control daemon started for " + pipe_dir;
          message += " does not answer; its log is in " + log_dir;
          result = DeadlineExceeded(std::move(message));
        }
        std::this_thread::sleep_for(kPoll);
      }
      if (result.ok()) {
        note << "vgpu run: started an MPS control daemon (pipe " << pipe_dir
             << "); it stays to serve later runs; stop it with: echo quit | "
             << VGPU_ENV_MPS_PIPE_DIRECTORY << "=" << pipe_dir << " " << control_program << "\n";
      }
    }
  }
  ::close(lock);  // releases the lock
  return result;
}

}  // namespace vgpu::run
