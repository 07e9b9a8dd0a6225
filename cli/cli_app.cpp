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

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// The subcommand CLI11 stopped in, or nullptr for the top level.
const CLI::App* SelectedSubcommand(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return s->parsed(); })) {
    return sub;
  }
  return nullptr;
}

}  // namespace

std::string UnknownCommandMessage(const std::string& word, const std::vector<std::string>& built) {
  // Every subcommand of vgpu, and what a build needs to have it (cli/CMakeLists.txt): the name of
  // one this build left out must not read as a typo.
  struct Known {
    const char* name;
    const char* needs;
  };
  static constexpr Known kAll[] = {
      {"run", ""},
      {"sim", "the simulator (sim/)"},
      {"top", "the node monitor's core (core/monitor)"},
      {"version", ""},
  };
  const std::string here = "this build has: " + Join(built);
  for (const Known& k : kAll) {
    if (word != k.name) continue;
    std::string message = "'vgpu " + word + "' is not in this build: it was configured without ";
    message += k.needs;
    message +=
        " (configure with VGPU_COMPONENTS empty, i.e. every component, or use a build that has "
        "it); ";
    message += here;
    return message;
  }
  if (!word.empty() && word[0] == '-') {
    return "unknown flag " + word +
           " (vgpu's own flags: --help, --version; a subcommand's flags go "
           "after its name, e.g. 'vgpu top --help')";
  }
  return "unknown command '" + word + "' (" + here + "; see 'vgpu --help')";
}

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
  } catch (const CLI::ExtrasError& e) {
    // CLI11 says "The following arguments were not expected: x" whether x is a command this
    // build lacks, a typo, or a word after a subcommand that takes none: say which.
    const CLI::App* sub = SelectedSubcommand(app);
    if (sub == nullptr) {
      std::vector<std::string> built;
      for (const CLI::App* s : app.get_subcommands({})) built.push_back(s->get_name());
      const std::string word = args.empty() ? "" : args.front();
      err << "vgpu: error: " << UnknownCommandMessage(word, built) << "\n";
    } else {
      const std::vector<std::string> extras = sub->remaining();
      const std::string extra = extras.empty() ? OneLine(e.what()) : extras.front();
      const std::string name = "vgpu " + sub->get_name();
      if (!extra.empty() && extra[0] == '-') {
        err << "vgpu: error: unknown flag " << extra << " for '" << name << "' (see '" << name
            << " --help')\n";
      } else {
        err << "vgpu: error: unexpected argument '" << extra << "': '" << name
            << "' takes no such word (see '" << name << " --help')\n";
      }
    }
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    // The help to read is the subcommand's, where its flags are.
    const CLI::App* sub = SelectedSubcommand(app);
    err << "vgpu: error: " << OneLine(e.what()) << " (see '"
        << (sub == nullptr ? std::string("vgpu") : "vgpu " + sub->get_name()) << " --help')\n";
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
