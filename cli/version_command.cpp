#include <ostream>

#include "build_info.h"
#include "cli_app.h"

namespace vgpu::cli {

Action RegisterVersion(CLI::App& parent, std::ostream& out) {
  CLI::App* cmd = parent.add_subcommand("version", "Print version, git commit, build type and CUDA headers version");
  return [cmd, &out]() {
    if (!cmd->parsed()) return -1;
    const int cuda = build_info::kCudaHeadersVersion;
    out << "vgpu " << build_info::kVersion << "\n"
        << "git commit:   " << build_info::kGitCommit << "\n"
        << "build type:   " << build_info::kBuildType << "\n"
        << "CUDA headers: " << cuda / 1000 << "." << (cuda % 1000) / 10 << " (" << cuda << ")\n";
    return kExitOk;
  };
}

}  // namespace vgpu::cli
