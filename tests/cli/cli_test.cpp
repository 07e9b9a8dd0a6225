#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "run_cli.h"

namespace {

using vgpu::cli::testing::CliResult;
using vgpu::cli::testing::RunVgpu;

TEST(Cli, NoArgumentsPrintsHelp) {
  const CliResult r = RunVgpu({});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("version"), std::string::npos);
}

TEST(Cli, VersionPrintsAllFields) {
  const CliResult r = RunVgpu({"version"});
  EXPECT_EQ(r.rc, 0);
  for (const char* field : {"vgpu ", "git commit:", "build type:", "CUDA headers: 13."}) {
    EXPECT_NE(r.out.find(field), std::string::npos) << field << " missing in: " << r.out;
  }
}

TEST(Cli, UsageErrorsAreOneLineWithExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {"nope"}, {"--bogus"}, {"version", "--bogus"}, {"version", "extra"}};
  for (const auto& args : cases) {
    const CliResult r = RunVgpu(args);
    EXPECT_EQ(r.rc, 2) << args[0];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("vgpu: error: ", 0), 0u) << r.err;
  }
}

// Wrong input names the problem and what to do, not CLI11's "arguments were not expected".
TEST(Cli, InputErrorsSayWhatIsWrong) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  std::vector<Case> cases = {
      {{"nope"}, "unknown command 'nope' (this build has: run"},
      {{"nope"}, "see 'vgpu --help'"},
      {{"--bogus"}, "--bogus"},
      {{"version", "extra"}, "unexpected argument 'extra': 'vgpu version' takes no such word"},
      {{"version", "--bogus"},
       "unknown flag --bogus for 'vgpu version' (see 'vgpu version --help')"},
  };
  // A flag vgpu run does not know, before the command: named, the command not run with it as an
  // argument (or as the program).
  cases.push_back(
      {{"run", "--bogus", "--", "true"}, "vgpu run: unknown flag --bogus (see 'vgpu run --help')"});
  cases.push_back({{"run", "--gpu", "1", "--", "true"}, "unknown flag --gpu (see"});
  cases.push_back({{"run", "--bogus", "true"}, "the command and its own flags go after --"});
  cases.push_back(
      {{"run", "--mode", "mpss", "--", "true"}, "--mode: 'mpss' is not one of time-slice, mps"});
#ifdef VGPU_CLI_HAS_TOP
  cases.push_back(
      {{"top", "--once", "extra"}, "unexpected argument 'extra': 'vgpu top' takes no such word"});
  cases.push_back({{"top", "--colour"}, "unknown flag --colour for 'vgpu top'"});
  // A bad value names the flag and points at the subcommand's help, where its flags are.
  cases.push_back({{"top", "--width", "5"}, "--width: '5' is too small (min 20)"});
  cases.push_back({{"top", "--width", "5"}, "(see 'vgpu top --help')"});
#endif
#ifdef VGPU_CLI_HAS_SIM
  cases.push_back({{"sim", "--bogus"}, "unknown flag --bogus for 'vgpu sim'"});
  cases.push_back({{"sim", "a.yaml", "--scenario", "b.yaml"}, "excludes"});  // one file, not two
#endif
  for (const Case& c : cases) {
    const CliResult r = RunVgpu(c.args);
    EXPECT_EQ(r.rc, 2) << c.args[0];
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.args[0] << ": " << r.err;
    EXPECT_EQ(r.err.find("were not expected"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// A build configured without a component names it: `vgpu sim x.yaml` there used to say
// "The following arguments were not expected: x.yaml sim".
TEST(Cli, ACommandThisBuildLacksSaysSo) {
  const std::vector<std::string> built = {"run", "top", "version"};
  const std::string sim = vgpu::cli::UnknownCommandMessage("sim", built);
  EXPECT_NE(sim.find("'vgpu sim' is not in this build"), std::string::npos) << sim;
  EXPECT_NE(sim.find("simulator (sim/)"), std::string::npos) << sim;
  EXPECT_NE(sim.find("this build has: run, top, version"), std::string::npos) << sim;
  const std::string top = vgpu::cli::UnknownCommandMessage("top", {"run", "version"});
  EXPECT_NE(top.find("core/monitor"), std::string::npos) << top;
  const std::string typo = vgpu::cli::UnknownCommandMessage("simm", built);
  EXPECT_NE(typo.find("unknown command 'simm'"), std::string::npos) << typo;
  const std::string flag = vgpu::cli::UnknownCommandMessage("--bogus", built);
  EXPECT_NE(flag.find("unknown flag --bogus"), std::string::npos) << flag;
}

#ifdef VGPU_CLI_HAS_SIM
// `vgpu sim FILE` takes the file as `--scenario FILE` does, and each way a file can be wrong says
// what it is and names the file: missing, a directory, YAML that does not parse, YAML that is not
// a scenario.
TEST(Cli, SimScenarioFileErrorsNameTheFileAndTheProblem) {
  const std::string dir =
      std::string(getenv("VGPU_TEST_TMP") ? getenv("VGPU_TEST_TMP") : "/tmp") + "/sim-input-errors";
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::string broken = write("broken.yaml", "name: x\nnodes: [\n");
  const std::string not_a_scenario = write("list.yaml", "- 1\n- 2\n");
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {{"sim", dir + "/missing.yaml"},
       {"cannot read scenario file " + dir + "/missing.yaml", "No such file or directory"}},
      {{"sim", "--scenario", dir + "/missing.yaml"}, {"missing.yaml", "No such file"}},
      {{"sim", dir}, {"scenario file " + dir + " is a directory, not a regular file"}},
      {{"sim", broken}, {broken, "line"}},
      {{"sim", not_a_scenario}, {not_a_scenario}},
  };
  for (const Case& c : cases) {
    const CliResult r = RunVgpu(c.args);
    EXPECT_EQ(r.rc, 2) << c.args.back() << ": " << r.err;
    EXPECT_EQ(r.err.rfind("vgpu sim: ", 0), 0u) << r.err;
    for (const std::string& w : c.want) EXPECT_NE(r.err.find(w), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << c.args.back();
  }
}
#endif

TEST(Cli, SubcommandHelp) {
  const CliResult r = RunVgpu({"version", "--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("version"), std::string::npos);
}

}  // namespace
