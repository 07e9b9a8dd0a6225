// `vgpu run`: runs a command with libvgpu.so preloaded and HAMi's environment contract set, on a
// fresh shared region, and exits with the command's status. Limits for one process tree on a bare
// GPU host, no Kubernetes.
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "cli/run_env.h"
#include "cli_app.h"
#include "nvml/nvml_library.h"
#include "vgpu/env_contract.h"

#ifndef VGPU_BUILD_TREE_LIBVGPU
#define VGPU_BUILD_TREE_LIBVGPU ""
#endif

namespace vgpu::cli {

namespace {

constexpr int kExitRunFailed = 125;  // vgpu itself failed (as `env`, `docker run`)
constexpr int kExitCannotExec = 126;
constexpr int kExitNotFound = 127;

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string BinaryDir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// A new, empty region file: libvgpu lays it out on first use.
std::string MakeRegionFile(std::string* error) {
  const char* tmp = getenv("TMPDIR");
  std::string path =
      std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/vgpu-run-XXXXXX.cache";
  std::vector<char> buf(path.begin(), path.end());
  buf.push_back('\0');
  const int fd = mkstemps(buf.data(), 6);
  if (fd < 0) {
    *error = std::string("cannot create a region file in ") + path + ": " + std::strerror(errno);
    return "";
  }
  fchmod(fd, 0666);  // processes of other users in the tree share it
  close(fd);
  return buf.data();
}

// The host's GPUs, from NVML.
Result<std::vector<run::HostGpu>> HostGpus() {
  auto nvml = nvml::Library::Open(
      "libnvidia-ml.so.1", "is the NVIDIA driver installed? --gpus is checked against its GPUs");
  if (!nvml.ok()) return nvml.status();
  auto ids = nvml::ListGpus(**nvml);
  if (!ids.ok()) return ids.status();
  std::vector<run::HostGpu> gpus;
  for (const auto& id : *ids) gpus.push_back({id.index, id.uuid});
  return gpus;
}

int RunChild(const std::vector<std::string>& command, const run::EnvMap& env) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    const std::string msg =
        "vgpu run: cannot run '" + command[0] + "': " + std::strerror(err) + "\n";
    (void)!write(2, msg.data(), msg.size());
    _exit(err == ENOENT ? kExitNotFound : kExitCannotExec);
  }
  // The terminal's Ctrl-C reaches the command (same process group); we only wait for it.
  struct sigaction ignore = {}, old_int = {}, old_quit = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitRunFailed;
}

Action RegisterRun(CLI::App& parent, Io io) {
  struct State {
    std::string gpus, region, lib;
    uint64_t gpumem = 0;
    int gpumem_percent = 0;
    int gpucores = -1;
    bool oom_killer = false;
    std::vector<std::string> command;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = parent.add_subcommand(
      "run", "Run a command with GPU memory/compute limits (libvgpu.so preloaded)");
  cmd->footer(
      "Usage: vgpu run [--gpus 0,1] [--gpumem MiB | --gpumem-percent P] [--gpucores P] "
      "[--region FILE] [--lib PATH] -- CMD [ARGS...]\nExit status: CMD's; 125 when vgpu run "
      "fails (e.g. a --gpus GPU this node does not have), 126/127 when CMD cannot run.");
  cmd->add_option("--gpus", state->gpus, "GPUs to expose (indices or UUIDs); default all");
  cmd->add_option("--gpumem", state->gpumem, "Memory limit per GPU, MiB")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_option("--gpumem-percent", state->gpumem_percent,
                  "Memory limit per GPU, percent of the card")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--gpucores", state->gpucores, "Compute limit per GPU, percent of the SMs")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--region", state->region,
                  "Shared region file (default: a fresh one, removed afterwards); runs naming "
                  "the same file share one limit");
  cmd->add_flag("--oom-killer", state->oom_killer,
                "Kill the largest process when the real footprint exceeds the limit");
  cmd->add_option("--lib", state->lib, "libvgpu.so to preload (default: found automatically)");
  cmd->add_option("command", state->command, "The command and its arguments (after --)");
  cmd->prefix_command();
  return [cmd, state, io]() {
    if (!cmd->parsed()) return kNotSelected;
    // After "--" CLI11 fills the positional; without it, the first word ends option parsing.
    std::vector<std::string> command = state->command;
    for (const auto& word : cmd->remaining()) command.push_back(word);
    if (!command.empty() && command.front() == "--") command.erase(command.begin());
    // CLI11 reports the "--" separator once more at the end of remaining(): drop that echo.
    if (!state->command.empty() && !cmd->remaining().empty() && command.back() == "--") {
      command.pop_back();
    }
    if (command.empty()) {
      io.err << "vgpu run: no command given (usage: vgpu run [options] -- CMD [ARGS...])\n";
      return kExitUsage;
    }
    run::RunOptions options;
    options.gpus = state->gpus;
    if (state->gpumem != 0) options.gpumem_mib = state->gpumem;
    if (state->gpumem_percent != 0) options.gpumem_percent = state->gpumem_percent;
    if (state->gpucores >= 0) options.gpucores = state->gpucores;
    options.oom_killer = state->oom_killer;

    // A GPU that does not exist is an error here, not a command that silently sees no GPU.
    if (!state->gpus.empty()) {
      auto wanted = run::ParseGpuList(state->gpus);
      if (!wanted.ok()) {
        io.err << "vgpu run: " << wanted.status().message() << "\n";
        return kExitUsage;
      }
      auto host = HostGpus();
      if (!host.ok()) {
        io.err << "vgpu run: --gpus " << state->gpus
               << ": cannot list this node's GPUs: " << host.status().message() << "\n";
        return kExitRunFailed;
      }
      if (Status present = run::CheckGpusPresent(*wanted, *host); !present.ok()) {
        io.err << "vgpu run: " << present.message() << "\n";
        return kExitRunFailed;
      }
    }
    const char* env_lib = getenv(VGPU_ENV_LIBRARY);
    auto lib = run::FindLibrary(state->lib, env_lib != nullptr ? env_lib : "", BinaryDir(),
                                VGPU_BUILD_TREE_LIBVGPU, FileExists);
    if (!lib.ok()) {
      io.err << "vgpu run: " << lib.status().message() << "\n";
      return kExitRunFailed;
    }
    std::string region = state->region;
    const bool fresh = region.empty();
    if (fresh) {
      std::string error;
      region = MakeRegionFile(&error);
      if (region.empty()) {
        io.err << "vgpu run: " << error << "\n";
        return kExitRunFailed;
      }
    }
    const char* preload = getenv("LD_PRELOAD");
    auto env = run::BuildRunEnvironment(options, *lib, region, preload != nullptr ? preload : "");
    if (!env.ok()) {
      if (fresh) unlink(region.c_str());
      io.err << "vgpu run: " << env.status().message() << "\n";
      return kExitUsage;
    }
    io.out.flush();
    io.err.flush();
    const int rc = RunChild(command, *env);
    if (fresh) unlink(region.c_str());
    if (rc < 0) {
      io.err << "vgpu run: fork failed: " << std::strerror(errno) << "\n";
      return kExitRunFailed;
    }
    return rc;
  };
}

const bool kRegistered = RegisterCommand(10, RegisterRun);

}  // namespace

}  // namespace vgpu::cli
