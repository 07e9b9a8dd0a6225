#pragma once

// `vgpu ARGS...` run in process (cli::RunCli), with what it printed: for the CLI's tests.

#include <sstream>
#include <string>
#include <vector>

#include "cli_app.h"

namespace vgpu::cli::testing {

struct CliResult {
  int rc;
  std::string out;
  std::string err;
};

inline CliResult RunVgpu(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int rc = RunCli(args, out, err);
  return {rc, out.str(), err.str()};
}

}  // namespace vgpu::cli::testing
