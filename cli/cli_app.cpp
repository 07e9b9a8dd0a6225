#include "cli_app.h"

#include <algorithm>
#include <ostream>

#include "core/base/build_info.h"

namespace vgpu::cli {
namespace {

// CLI11 messages can span lines; usage errors must stay on one.
std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"vgpu: GPU sharing for Kubernetes (HAMi-compatible)", "vgpu"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("vgpu ") + build_info::kVersion);

  std::vector<Action> actions;
  for (const RegisteredCommand& command : RegisteredCommands()) {
    actions.push_back(command.registrar(app, Io{out, err}));
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    out << app.version() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    err << "vgpu: error: " << OneLine(e.what()) << " (see 'vgpu --help')\n";
    return kExitUsage;
  }

  for (const Action& action : actions) {
    const int rc = action();
    if (rc != kNotSelected) return rc;
  }
  out << app.help();
  return kExitOk;
}

}  // namespace vgpu::cli
