#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace vgpu::cli {

// Exit codes of the `vgpu` command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;

// A subcommand registers its flags on `app` and returns the action to run when selected.
using Action = std::function<int()>;
using Registrar = std::function<Action(CLI::App& app)>;

// Builds the `vgpu` command tree, parses `args` (without argv[0]) and runs the selected
// subcommand. Usage errors print one line to `err` and return kExitUsage.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Each subcommand lives in its own file and adds itself through one of these.
Action RegisterVersion(CLI::App& parent, std::ostream& out);

}  // namespace vgpu::cli
