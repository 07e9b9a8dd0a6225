#include "core/base/daemon_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/log.h"

namespace vgpu::daemon {
namespace {

TEST(DaemonFlags, GoStyleSingleDashFlags) {
  const std::vector<std::string> in = {"vgpu-monitor",
                                       "-v=4",
                                       "-v",
                                       "3",
                                       "-v4",
                                       "-metrics-bind-address=:1",
                                       "-legacy-metrics",
                                       "--tick",
                                       "-5",
                                       "--node-name=a",
                                       "-x",
                                       "--",
                                       "-after=1"};
  // argv[0] starts with a letter and no dash: untouched.
  EXPECT_EQ(GoStyleArgs(in),
            (std::vector<std::string>{"vgpu-monitor", "--v=4", "-v", "3", "-v4",
                                      "--metrics-bind-address=:1", "--legacy-metrics", "--tick",
                                      "-5", "--node-name=a", "-x", "--", "-after=1"}));
}

std::vector<std::string>& Lines() {
  static std::vector<std::string> lines;
  return lines;
}

// A daemon's command line: the common flags, a plain option, a bool flag and a comma list.
class DaemonParse : public ::testing::Test {
 protected:
  DaemonParse() {
    AddCommonFlags(app_, common_, "0 lifecycle, 1 each request");
    AddKubeconfigFlag(app_, kubeconfig_);
    AddMetricsBindFlag(app_, metrics_, "address of /metrics");
    app_.add_option("--scheduler-name", name_);
    app_.add_flag("--leader-elect", leader_);
    app_.add_option("--webhook-allow-overrides", list_)->delimiter(',');
  }
  void SetUp() override {
    Lines().clear();
    log::SetSink([](std::string_view line) { Lines().emplace_back(line); });
  }
  void TearDown() override {
    log::SetSink(nullptr);
    log::SetVerbosity(0);
  }
  std::optional<int> Run(std::vector<std::string> args) {
    args.insert(args.begin(), "vgpu-daemon");
    return Parse(app_, std::move(args), common_);
  }

  CLI::App app_{"test daemon"};
  CommonFlags common_{.verbosity = 1};
  std::string kubeconfig_, metrics_ = ":9395", name_;
  bool leader_ = false;
  std::vector<std::string> list_;
};

TEST_F(DaemonParse, HamiSpellingsReachTheLogger) {
  EXPECT_EQ(
      Run({"-v=4", "-metrics-bind-address=:9394", "-kubeconfig", "/k", "--leader-elect=true"}),
      std::nullopt);
  EXPECT_EQ(common_.verbosity, 4);
  EXPECT_TRUE(log::V(4));
  EXPECT_EQ(metrics_, ":9394");
  EXPECT_EQ(kubeconfig_, "/k");
  EXPECT_TRUE(leader_);
  EXPECT_TRUE(Lines().empty());
}

TEST_F(DaemonParse, EverySpellingOfDashV) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"-v=3"}, {"--v=3"}, {"-v", "3"}, {"--v", "3"}, {"-v3"}}) {
    common_.verbosity = 0;
    EXPECT_EQ(Run(args), std::nullopt) << args[0];
    EXPECT_EQ(common_.verbosity, 3) << args[0];
  }
}

TEST_F(DaemonParse, DefaultVerbosityIsApplied) {
  EXPECT_EQ(Run({}), std::nullopt);
  EXPECT_TRUE(log::V(1));
  EXPECT_FALSE(log::V(2));
}

// A chart's extraArgs come after the flags it sets: they win, as with Go's flag package.
TEST_F(DaemonParse, RepeatedFlagTakesTheLastValueListsKeepAll) {
  EXPECT_EQ(Run({"--scheduler-name=a", "-v=2", "--scheduler-name", "b", "-v=4",
                 "--webhook-allow-overrides=x,y", "--webhook-allow-overrides=z",
                 "--metrics-bind=:1", "--metrics-bind-address=:2"}),
            std::nullopt);
  EXPECT_EQ(name_, "b");
  EXPECT_EQ(common_.verbosity, 4);
  EXPECT_EQ(metrics_, ":2");
  EXPECT_EQ(list_, (std::vector<std::string>{"x", "y", "z"}));
}

TEST_F(DaemonParse, BadCommandLineIsOneErrorLineAndStatus2) {
  EXPECT_EQ(Run({"--no-such-flag"}), 2);
  ASSERT_EQ(Lines().size(), 1u);
  EXPECT_NE(Lines()[0].find("level=error msg=\"bad command line\""), std::string::npos)
      << Lines()[0];
  EXPECT_NE(Lines()[0].find("--no-such-flag"), std::string::npos) << Lines()[0];
  Lines().clear();
  EXPECT_EQ(Run({"-v=many"}), 2);
  EXPECT_EQ(Lines().size(), 1u);
  Lines().clear();
  EXPECT_EQ(BadFlags("--tick must be positive"), 2);
  ASSERT_EQ(Lines().size(), 1u);
  EXPECT_NE(Lines()[0].find("error=\"--tick must be positive\""), std::string::npos) << Lines()[0];
}

TEST_F(DaemonParse, HelpExitsZero) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(Run({"--help"}), 0);
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("--metrics-bind-address"), std::string::npos) << help;
  EXPECT_NE(help.find("HAMi's charts pass -v=4"), std::string::npos) << help;
  EXPECT_TRUE(Lines().empty());
}

}  // namespace
}  // namespace vgpu::daemon
