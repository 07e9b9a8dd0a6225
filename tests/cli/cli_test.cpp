#include <gtest/gtest.h>

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

TEST(Cli, SubcommandHelp) {
  const CliResult r = RunVgpu({"version", "--help"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("version"), std::string::npos);
}

}  // namespace
