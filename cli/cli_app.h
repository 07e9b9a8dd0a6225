#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "command_registry.h"

namespace vgpu::cli {

// Builds the `vgpu` command tree from the registered subcommands, parses `args` (without argv[0])
// and runs the selected one. Usage errors print one line to `err` and return kExitUsage.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace vgpu::cli
