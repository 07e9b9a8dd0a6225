#include <ostream>

#include "cli_app.h"
#include "core/base/build_info.h"

namespace vgpu::cli {

namespace {

Action RegisterVersion(CLI::App& parent, Io io) {
  CLI::App* cmd = parent.add_subcommand(
      "version", "Print version, git commit, build type and CUDA headers version");
  return [cmd, &out = io.out]() {
    if (!cmd->parsed()) return kNotSelected;
    const int cuda = build_info::kCudaHeadersVersion;
    out << "vgpu " << build_info::kVersion << "\n"
        << "git commit:   " << build_info::kGitCommit << "\n"
        << "build type:   " << build_info::kBuildType << "\n"
        << "CUDA headers: " << cuda / 1000 << "." << (cuda % 1000) / 10 << " (" << cuda << ")\n";
    return kExitOk;
  };
}

const bool kRegistered = RegisterCommand(90, RegisterVersion);

}  // namespace

}  // namespace vgpu::cli
