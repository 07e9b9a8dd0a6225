#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "command_registry.h"

namespace vgpu::cli {

// Builds the `vgpu` command tree from the registered subcommands, parses `args` (without argv[0])
// and runs the selected one. Usage errors print one line to `err` and return kExitUsage.
int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The usage error for `word` where a subcommand was expected: a subcommand this build was
// configured without (and what it needs), a flag vgpu does not have, or an unknown word, with the
// subcommands `built` has. Pure, for the tests.
std::string UnknownCommandMessage(const std::string& word, const std::vector<std::string>& built);

}  // namespace vgpu::cli
