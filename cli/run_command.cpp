// `vgpu run`: runs a command with libvgpu.so preloaded and HAMi's environment contract set, on a
// fresh shared region, and exits with the command's status. Limits for one process tree on a bare
// GPU host, no Kubernetes.
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/flag_values.h"
#include "cli/preload_check.h"
#include "cli/run_env.h"
#include "cli/run_files.h"
#include "cli/run_mps.h"
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

// Above any GPU's memory, and far from overflowing libvgpu's byte counts (1 PiB).
constexpr uint64_t kMaxGpumemMiB = uint64_t{1} << 30;

// --region-group: a group name or number the caller belongs to (root: any group).
Result<gid_t> ResolveGroup(const std::string& name) {
  gid_t gid = 0;
  if (auto number = ParseWholeNumber(name, 0, INT32_MAX); number.ok()) {
    gid = static_cast<gid_t>(*number);
  } else {
    const struct group* g = getgrnam(name.c_str());
    if (g == nullptr) return InvalidArgument("--region-group " + name + ": no such group");
    gid = g->gr_gid;
  }
  if (geteuid() == 0 || getegid() == gid) return gid;
  std::vector<gid_t> groups(static_cast<size_t>(std::max(getgroups(0, nullptr), 0)) + 1);
  const int n = getgroups(static_cast<int>(groups.size()), groups.data());
  for (int i = 0; i < n; ++i) {
    if (groups[static_cast<size_t>(i)] == gid) return gid;
  }
  return InvalidArgument("--region-group " + name +
                         ": you are not a member of it (`id -Gn` lists your groups)");
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

int RunChild(const std::vector<std::string>& command, const run::EnvMap& env,
             const std::vector<std::string>& drop) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    for (const auto& name : drop) unsetenv(name.c_str());
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

// The names of the variables in this process's environment.
std::vector<std::string> EnvironmentNames() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) names.emplace_back(*e, static_cast<size_t>(eq - *e));
  }
  return names;
}

Action RegisterRun(CLI::App& parent, Io io) {
  struct State {
    std::string gpus, region, region_group, lib, gpumem, mode = VGPU_SHARING_TIME_SLICE, mps_pipe;
    int gpumem_percent = 0;
    int gpucores = -1;
    bool oom_killer = false;
    std::vector<std::string> command;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = parent.add_subcommand(
      "run", "Run a command with GPU memory/compute limits (libvgpu.so preloaded)");
  cmd->footer(
      "Usage: vgpu run [--gpus 0,1] [--gpumem SIZE | --gpumem-percent P] [--gpucores P] "
      "[--mode time-slice|mps [--mps-pipe DIR]] [--region FILE] [--region-group GROUP] [--lib "
      "PATH] "
      "-- CMD [ARGS...]\n"
      "Exit status: CMD's; 2 for a bad option; 125 when vgpu run fails (e.g. a --gpus GPU this "
      "node does not have, a --lib that is not libvgpu.so, a --region another user can write), "
      "126/127 when CMD cannot run.");
  cmd->add_option("--gpus", state->gpus, "GPUs to expose (indices or UUIDs); default all")
      ->check(NotEmpty());
  CLI::Option* gpumem =
      cmd->add_option("--gpumem", state->gpumem,
                      "Memory limit per GPU: MiB (4096) or with a unit (3000m, 3g, 3Gi, 1t)")
          ->check(CLI::Validator(
              [](std::string& text) -> std::string {
                auto mib = ParseMemoryMiB(text, kMaxGpumemMiB);
                return mib.ok() ? std::string() : mib.status().message();
              },
              "SIZE"));
  cmd->add_option("--gpumem-percent", state->gpumem_percent,
                  "Memory limit per GPU, percent of the card")
      ->check(WholeNumber(1, 100))
      ->excludes(gpumem);
  cmd->add_option("--gpucores", state->gpucores,
                  "Compute limit per GPU, percent of the SMs (0 or 100: unlimited)")
      ->check(WholeNumber(0, 100));
  cmd->add_option("--mode", state->mode,
                  "How the GPU is shared: time-slice (libvgpu throttles to --gpucores) or mps (an "
                  "NVIDIA MPS client: MPS gives it --gpucores of the SMs, runs side by side with "
                  "other MPS runs; a fault of one MPS client can end the others)")
      ->check(OneOf({VGPU_SHARING_TIME_SLICE, VGPU_SHARING_MPS}));
  cmd->add_option("--mps-pipe", state->mps_pipe,
                  "--mode mps: the MPS control daemon's pipe directory (default "
                  "$CUDA_MPS_PIPE_DIRECTORY, else /tmp/vgpu-mps-<uid>/pipe); one is started there "
                  "if none answers, and stays for later runs")
      ->check(NotEmpty());
  cmd->add_option("--region", state->region,
                  "Shared region file (default: a fresh one in a private directory, removed "
                  "afterwards); runs naming the same file share one limit. It must be yours and "
                  "open to nobody else")
      ->check(NotEmpty());
  cmd->add_option("--region-group", state->region_group,
                  "Share the region with this group's members (a command that switches users); "
                  "any member can then break the command's limits or kill it")
      ->check(NotEmpty());
  cmd->add_flag("--oom-killer", state->oom_killer,
                "Kill the largest process when the real footprint exceeds the limit");
  cmd->add_option("--lib", state->lib, "libvgpu.so to preload (default: found automatically)")
      ->check(NotEmpty());
  cmd->add_option("command", state->command, "The command and its arguments (after --)");
  cmd->prefix_command();
  // The first word that is not one of run's options starts the command; all after it, flags
  // included, are the command's, in order (without this CLI11 2.1 moved a flag after the command's
  // name, `vgpu run python -v x.py`, behind its other words). Unknown flags before it stay in
  // remaining() (run::CommandWords refuses them).
  cmd->positionals_at_end(true);
  return [cmd, state, io]() {
    if (!cmd->parsed()) return kNotSelected;
    auto fail = [&io](int rc, const std::string& message) {
      io.err << "vgpu run: " << message << "\n";
      return rc;
    };
    auto words = run::CommandWords(state->command, cmd->remaining());
    if (!words.ok()) return fail(kExitUsage, words.status().message());
    const std::vector<std::string>& command = *words;
    if (command.empty()) {
      return fail(kExitUsage, "no command given (usage: vgpu run [options] -- CMD [ARGS...])");
    }
    run::RunOptions options;
    options.gpus = state->gpus;
    if (!state->gpumem.empty()) options.gpumem_mib = *ParseMemoryMiB(state->gpumem, kMaxGpumemMiB);
    if (state->gpumem_percent != 0) options.gpumem_percent = state->gpumem_percent;
    if (state->gpucores >= 0) options.gpucores = state->gpucores;
    options.oom_killer = state->oom_killer;
    if (state->mode == VGPU_SHARING_MPS) {
      const char* env_pipe = getenv(VGPU_ENV_MPS_PIPE_DIRECTORY);
      options.mps = true;
      options.mps_pipe_dir = run::MpsPipeDirectory(
          state->mps_pipe, env_pipe != nullptr ? env_pipe : "", static_cast<uint32_t>(geteuid()));
    } else if (!state->mps_pipe.empty()) {
      return fail(kExitUsage, "--mps-pipe needs --mode mps");
    }
    // Options first (usage errors), with placeholder paths: nothing is created yet.
    if (auto checked = run::BuildRunEnvironment(options, "/", "/", ""); !checked.ok()) {
      return fail(kExitUsage, checked.status().message());
    }
    run::Caller caller{static_cast<uint32_t>(geteuid()), std::nullopt};
    if (!state->region_group.empty()) {
      auto gid = ResolveGroup(state->region_group);
      if (!gid.ok()) return fail(kExitUsage, gid.status().message());
      caller.shared_gid = *gid;
    }

    // The library: found, writable only by root or the caller, and libvgpu.so. A command under
    // a library that is not loaded runs without limits, so every doubt stops here.
    const char* env_lib = getenv(VGPU_ENV_LIBRARY);
    auto found = run::FindLibrary(state->lib, env_lib != nullptr ? env_lib : "", BinaryDir(),
                                  VGPU_BUILD_TREE_LIBVGPU, FileExists);
    if (!found.ok()) return fail(kExitRunFailed, found.status().message());
    const std::string lib_source = !state->lib.empty() ? "--lib " + state->lib
                                   : (env_lib != nullptr && *env_lib != '\0')
                                       ? std::string(VGPU_ENV_LIBRARY "=") + env_lib
                                       : *found;
    const std::string not_run = "; the command was not run (it would have run without limits)";
    auto lib = run::CheckLibraryPath(*found, caller.uid);
    if (!lib.ok())
      return fail(kExitRunFailed, lib_source + ": " + lib.status().message() + not_run);
    if (Status probe = run::ProbePreloadLibrary(*lib); !probe.ok()) {
      return fail(kExitRunFailed, lib_source + ": " + probe.message() + not_run);
    }

    // A GPU that does not exist is an error here, not a command that silently sees no GPU.
    if (!state->gpus.empty()) {
      auto wanted = run::ParseGpuList(state->gpus);
      if (!wanted.ok()) return fail(kExitUsage, wanted.status().message());
      auto host = HostGpus();
      if (!host.ok()) {
        return fail(kExitRunFailed, "--gpus " + state->gpus + ": cannot list this node's GPUs: " +
                                        host.status().message());
      }
      if (Status present = run::CheckGpusPresent(*wanted, *host); !present.ok()) {
        return fail(kExitRunFailed, present.message());
      }
    }
    const char* path_env = getenv("PATH");
    const std::string program =
        run::ResolveCommand(command[0], path_env != nullptr ? path_env : "");
    if (Status keeps = run::CheckKeepsPreload(program); !keeps.ok()) {
      return fail(kExitRunFailed, keeps.message() + "; the command was not run");
    }

    // The region: a fresh one in a directory of its own, or the caller's --region file.
    std::optional<run::PrivateRegion> fresh;
    std::string region;
    if (state->region.empty()) {
      const char* tmp = getenv("TMPDIR");
      auto made = run::PrivateRegion::Create(tmp != nullptr ? tmp : "", caller);
      if (!made.ok()) return fail(kExitRunFailed, made.status().message());
      fresh.emplace(std::move(*made));
      region = fresh->path();
    } else {
      auto prepared = run::PrepareUserRegion(state->region, caller);
      if (!prepared.ok()) return fail(kExitRunFailed, prepared.status().message());
      region = *prepared;
    }
    if (options.mps) {
      const char* path = getenv("PATH");
      const std::string control =
          run::ResolveCommand("nvidia-cuda-mps-control", path != nullptr ? path : "");
      if (Status daemon = run::EnsureMpsDaemon(options.mps_pipe_dir, caller.uid, control, io.err);
          !daemon.ok()) {
        return fail(kExitRunFailed,
                    "--mode mps: " + daemon.message() + "; the command was not run");
      }
    }
    const char* preload = getenv("LD_PRELOAD");
    auto env = run::BuildRunEnvironment(options, *lib, region, preload != nullptr ? preload : "");
    if (!env.ok()) return fail(kExitUsage, env.status().message());
    io.out.flush();
    io.err.flush();
    const int rc = RunChild(command, *env, run::InheritedLimitsToDrop(EnvironmentNames(), *env));
    if (rc < 0) return fail(kExitRunFailed, std::string("fork failed: ") + std::strerror(errno));
    return rc;
  };
}

const bool kRegistered = RegisterCommand(10, RegisterRun);

}  // namespace

}  // namespace vgpu::cli
