#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <ostream>
#include <vector>

namespace vgpu::cli {

// Exit codes of the `vgpu` command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;

// Returned by an Action whose subcommand was not selected on the command line.
inline constexpr int kNotSelected = -1;

struct Io {
  std::ostream& out;
  std::ostream& err;
};

// Runs the subcommand when it was selected; returns kNotSelected otherwise.
using Action = std::function<int()>;

// Adds a subcommand with its flags to `app` and returns its action.
using Registrar = std::function<Action(CLI::App& app, Io io)>;

// Each subcommand file registers itself at static-initialisation time:
//   const bool kRegistered = RegisterCommand(20, RegisterFoo);
// `order` fixes the position in `vgpu --help`. The CLI sources form an OBJECT library so that
// every registration is linked in.
bool RegisterCommand(int order, Registrar registrar);

struct RegisteredCommand {
  int order;
  Registrar registrar;
};
const std::vector<RegisteredCommand>& RegisteredCommands();

}  // namespace vgpu::cli
