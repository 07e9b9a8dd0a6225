#include "process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace vgpu::testing {

namespace {

std::string ReadFd(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  return out;
}

}  // namespace

Child::Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             bool pipe_stdin) {
  int out[2], err[2], in[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
      (pipe_stdin && pipe2(in, O_CLOEXEC) != 0)) {
    throw std::runtime_error("pipe failed");
  }
  // Build argv/envp before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> env_strings;
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) merged[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  merged.erase("LD_PRELOAD");  // the test binary may be sanitized; children are not
  for (const auto& [k, v] : env) merged[k] = v;
  env_strings.reserve(merged.size());
  for (const auto& [k, v] : merged) {
    std::string entry = k;
    entry += '=';
    entry += v;
    env_strings.push_back(std::move(entry));
  }
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    if (pipe_stdin) {
      dup2(in[0], 0);
    } else {
      const int devnull = open("/dev/null", O_RDONLY);
      dup2(devnull, 0);
    }
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_ = out[0];
  err_ = err[0];
  if (pipe_stdin) {
    close(in[0]);
    in_ = in[1];
  }
}

Child::~Child() {
  if (!waited_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    Wait();
  }
  if (out_ >= 0) close(out_);
  if (err_ >= 0) close(err_);
  if (in_ >= 0) close(in_);
}

std::string Child::ReadLine() {
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    char buf[1024];
    const ssize_t n = read(out_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string rest;
      rest.swap(buffer_);
      return rest;
    }
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

bool Child::ReadLineWithin(int timeout_ms, std::string* line) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      *line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{out_, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    char buf[1024];
    const ssize_t n = read(out_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

std::string Child::ReadAllStdout() {
  std::string rest;
  rest.swap(buffer_);
  return rest + ReadFd(out_);
}

std::string Child::ReadAllStderr() {
  return ReadFd(err_);
}

bool Child::WriteLine(const std::string& line) {
  const std::string text = line + "\n";
  return in_ >= 0 && write(in_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

void Child::CloseStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

int Child::Wait() {
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  waited_ = true;
  return status;
}

bool Child::WaitWithin(int timeout_ms, int* status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const pid_t got = waitpid(pid_, status, WNOHANG);
    if (got == pid_) {
      waited_ = true;
      return true;
    }
    if (got < 0 && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

RunResult RunProcess(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env) {
  Child child(argv, env, false);
  RunResult r;
  r.out = child.ReadAllStdout();
  r.err = child.ReadAllStderr();
  r.status = child.Wait();
  return r;
}

}  // namespace vgpu::testing
