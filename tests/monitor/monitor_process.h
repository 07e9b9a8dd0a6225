#pragma once

// The vgpu-monitor binary run as a child process with its stderr in a file, for the tests that
// drive the binary (monitor_binary_test, monitor_binary_kube_test).

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for posix_spawn

namespace vgpu::monitor {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One run of the binary; the destructor kills and reaps it if it still runs.
class MonitorProcess {
 public:
  MonitorProcess(const fs::path& dir, std::vector<std::string> args,
                 std::vector<std::string> env_overrides)
      : stderr_path_(dir / ("stderr-" + std::to_string(counter_++))) {
    args.insert(args.begin(), VGPU_MONITOR_BINARY);
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The environment: ours minus what the monitor reads, plus the overrides.
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      bool dropped = false;
      for (const char* name : {"NODE_NAME=", "HOOK_PATH=", "HAMI_RESYNC_INTERVAL=",
                               "LD_LIBRARY_PATH=", "KUBECONFIG="}) {
        dropped = dropped || kv.starts_with(name);
      }
      if (!dropped) env_.push_back(kv);
    }
    for (std::string& e : env_overrides) env_.push_back(std::move(e));
    std::vector<char*> envp;
    envp.reserve(env_.size() + 1);
    for (std::string& e : env_) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    (void)posix_spawn_file_actions_init(&actions);
    (void)posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path_.c_str(),
                                           O_WRONLY | O_CREAT | O_TRUNC, 0644);
    spawned_ = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) == 0;
    (void)posix_spawn_file_actions_destroy(&actions);
  }
  ~MonitorProcess() {
    if (spawned_ && !exited_) {
      (void)::kill(pid_, SIGKILL);
      (void)::waitpid(pid_, nullptr, 0);
    }
  }
  MonitorProcess(const MonitorProcess&) = delete;
  MonitorProcess& operator=(const MonitorProcess&) = delete;

  bool spawned() const { return spawned_; }
  pid_t pid() const { return pid_; }
  std::string stderr_text() const { return ReadFile(stderr_path_); }

  // The port from the start-up line "msg=listening address=127.0.0.1:PORT", or 0 when it did not
  // come (or the process ended) within the limit.
  int WaitForPort(std::chrono::milliseconds limit) {
    static const std::regex kLine(R"(msg=listening address=127\.0\.0\.1:([0-9]+))");
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      std::smatch m;
      const std::string text = stderr_text();
      if (std::regex_search(text, m, kLine)) return std::stoi(m[1]);
      if (Exited(0ms)) return 0;
      std::this_thread::sleep_for(20ms);
    }
    return 0;
  }
  // Whether it has exited (waiting up to `limit`); exit_code() is then its code.
  bool Exited(std::chrono::milliseconds limit) {
    if (exited_) return true;
    const auto end = std::chrono::steady_clock::now() + limit;
    do {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      }
      std::this_thread::sleep_for(10ms);
    } while (std::chrono::steady_clock::now() < end);
    return false;
  }
  int exit_code() const { return exit_code_; }
  void Terminate() { (void)::kill(pid_, SIGTERM); }

 private:
  static inline int counter_ = 0;
  fs::path stderr_path_;
  std::vector<std::string> env_;
  pid_t pid_ = 0;
  bool spawned_ = false;
  bool exited_ = false;
  int exit_code_ = -1;
};

}  // namespace vgpu::monitor
