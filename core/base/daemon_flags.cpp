#include "core/base/daemon_flags.h"

#include <algorithm>
#include <utility>

#include "core/base/log.h"

namespace vgpu::daemon {

void AddCommonFlags(CLI::App& app, CommonFlags& flags, const std::string& levels) {
  app.add_option("-v,--v", flags.verbosity,
                 "log verbosity, klog's -v (HAMi's charts pass -v=4): " + levels)
      ->capture_default_str();
}

void AddKubeconfigFlag(CLI::App& app, std::string& path) {
  app.add_option("--kubeconfig", path,
                 "kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)");
}

void AddMetricsBindFlag(CLI::App& app, std::string& address, const std::string& help) {
  app.add_option("--metrics-bind,--metrics-bind-address", address, help)->capture_default_str();
}

std::vector<std::string> GoStyleArgs(std::vector<std::string> args) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  for (std::string& a : args) {
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || !letter(a[1])) continue;
    const size_t eq = a.find('=');
    const size_t name_len = (eq == std::string::npos ? a.size() : eq) - 1;
    if (eq == std::string::npos && digits(std::string_view(a).substr(2))) continue;  // -v, -v4
    if (name_len > 1 || eq != std::string::npos) a.insert(0, "-");
  }
  return args;
}

int BadFlags(const std::string& problem) {
  log::Error("bad command line", {{"error", problem}, {"help", "--help lists the flags"}});
  return 2;
}

std::optional<int> Parse(CLI::App& app, std::vector<std::string> args, const CommonFlags& common) {
  // Go's flag package: the last of repeated values wins. List options (comma lists) keep all.
  for (CLI::Option* o : app.get_options()) {
    if (o->get_expected_max() <= 1) o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
  args = GoStyleArgs(std::move(args));
  if (!args.empty()) args.erase(args.begin());  // the program's name
  std::reverse(args.begin(), args.end());       // CLI11 takes the arguments last first
  try {
    app.parse(args);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help: the text on stdout, 0
  } catch (const CLI::ParseError& e) {
    return BadFlags(e.what());
  }
  log::SetVerbosity(common.verbosity);
  return std::nullopt;
}

}  // namespace vgpu::daemon
