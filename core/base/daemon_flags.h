#pragma once

// The command line of the daemons (vgpu-scheduler, vgpu-device-plugin, vgpu-monitor), read one
// way: CLI11, but as Go's flag package reads HAMi's binaries' flags, so that HAMi's charts and
// values work unchanged (docs/operations.md, "Flags and logs"):
//   - `-name=value`, `-name value` mean `--name=value`, `--name value` (HAMi's charts: `-v=4`);
//   - a flag given twice takes the last value (a chart's extraArgs override what it sets);
//   - a bad command line is one log line (core/base/log.h) and exit status 2, as in Go; --help
//     prints the flags on stdout and exits 0.
// The flags every daemon has are registered here, with one help text each.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace vgpu::daemon {

struct CommonFlags {
  int verbosity = 0;  // -v: klog's levels, applied to core/base/log.h by Parse
};

// `-v,--v`. `levels` says what each level adds for this daemon (for --help); `flags.verbosity`
// holds the default.
void AddCommonFlags(CLI::App& app, CommonFlags& flags, const std::string& levels);

// `--kubeconfig` (kube::DefaultConfig's order when empty).
void AddKubeconfigFlag(CLI::App& app, std::string& path);

// `--metrics-bind`, and `--metrics-bind-address` as HAMi spells it: host:port, :port or [v6]:port.
void AddMetricsBindFlag(CLI::App& app, std::string& address, const std::string& help);

// Go's spellings rewritten to CLI11's: each single-dash argument whose name starts with a letter
// and is longer than one letter, or carries `=value`, gets a second dash ("-v=4" -> "--v=4",
// "-metrics-bind-address=:9394" -> "--metrics-bind-address=:9394"). Left alone: "-v", "-v4"
// (CLI11's short option with its value, accepted before), "-5", "--x", and all after "--".
std::vector<std::string> GoStyleArgs(std::vector<std::string> args);

// Parses `args` (argv, program name first). nullopt: parsed, the verbosity applied to the logger,
// the daemon goes on. Otherwise the exit status: 0 after --help, 2 after a bad command line
// (logged). Every option of `app` given more than once takes its last value.
std::optional<int> Parse(CLI::App& app, std::vector<std::string> args, const CommonFlags& common);

// A problem found in the flags' values after parsing: logged as Parse logs its own; returns 2.
int BadFlags(const std::string& problem);

}  // namespace vgpu::daemon
