// The MPS supervisor against the fake nvidia-cuda-mps-control (testing/fakes/mps): directories and
// their modes, start, crash and restart, a daemon that cannot be kept up, shutdown.

#include "deviceplugin/mps_daemon.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace vgpu::deviceplugin {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = MpsSupervisor::Clock;

// Running and not a zombie: where PID 1 does not reap (containers), a killed daemon whose parent
// is gone stays a zombie that kill(pid, 0) still reaches.
bool Alive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(") ");
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

class MpsSupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("vgpu-mps-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    options_.root = root_.string();
    options_.control = VGPU_FAKE_MPS_CONTROL;
    options_.backoff = {1000ms, 4000ms, 30000ms};
    options_.command_timeout = 5000ms;
  }
  void TearDown() override {
    // Whatever a failed case left running.
    for (const char* uuid : {"GPU-a", "GPU-b"}) {
      std::ifstream pid_file(root_ / uuid / "pipe" / "fake-control.pid");
      pid_t pid = 0;
      if (pid_file >> pid && pid > 0) ::kill(pid, SIGKILL);
    }
    fs::remove_all(root_);
  }
  pid_t DaemonPid(const std::string& uuid) {
    std::ifstream f(root_ / uuid / "pipe" / "fake-control.pid");
    pid_t pid = 0;
    f >> pid;
    return pid;
  }
  bool Running(const std::string& uuid) { return Alive(DaemonPid(uuid)); }
  void Crash(const std::string& uuid) {
    const pid_t pid = DaemonPid(uuid);
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    // Reaped by init (the fake's daemon is orphaned); wait until it is gone.
    for (int i = 0; i < 200 && Alive(pid); ++i) ::usleep(10000);
  }
  mode_t Mode(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }

  fs::path root_;
  MpsOptions options_;
};

TEST_F(MpsSupervisorTest, StartsOneDaemonPerGpuWithItsOwnDirectories) {
  MpsSupervisor sup(options_, {"GPU-a", "GPU-b"});
  ASSERT_TRUE(sup.Start(Clock::now()).ok());
  EXPECT_TRUE(sup.Unhealthy().empty());
  EXPECT_TRUE(Running("GPU-a"));
  EXPECT_TRUE(Running("GPU-b"));
  EXPECT_NE(DaemonPid("GPU-a"), DaemonPid("GPU-b"));
  // Root's alone down to each GPU's directory; pipe directories and shm open to clients of any
  // UID (sticky, as /tmp); logs the daemon's.
  EXPECT_EQ(Mode(root_), 0700u);
  EXPECT_EQ(Mode(root_ / "GPU-a"), 0700u);
  EXPECT_EQ(Mode(root_ / "GPU-a" / "pipe"), 01777u);
  EXPECT_EQ(Mode(root_ / "GPU-a" / "log"), 0700u);
  EXPECT_EQ(Mode(root_ / "shm"), 01777u);
  // Each daemon was started for its own GPU.
  std::ifstream log(root_ / "GPU-b" / "log" / "control.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("CUDA_VISIBLE_DEVICES=GPU-b"), std::string::npos) << text;

  sup.StopAll();
  EXPECT_FALSE(Running("GPU-a"));
  EXPECT_FALSE(Running("GPU-b"));
}

TEST_F(MpsSupervisorTest, CrashedDaemonIsRestartedAndHealthFollows) {
  MpsSupervisor sup(options_, {"GPU-a", "GPU-b"});
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(sup.Start(t0).ok());
  const pid_t first = DaemonPid("GPU-a");
  Crash("GPU-a");
  // The tick that finds it dead restarts it at once (first failure): health is back by the end.
  EXPECT_FALSE(sup.Tick(t0 + 1s));  // went unhealthy and back within the tick: no net change
  EXPECT_TRUE(sup.Unhealthy().empty());
  EXPECT_TRUE(Running("GPU-a"));
  EXPECT_NE(DaemonPid("GPU-a"), first);

  // Dies again with its start refused: unhealthy, and retried only after the back-off.
  Crash("GPU-a");
  std::ofstream(root_ / "GPU-a" / "pipe" / "fake-refuse-start") << "1";
  EXPECT_TRUE(sup.Tick(t0 + 2s));
  EXPECT_EQ(sup.Unhealthy(), (std::set<std::string>{"GPU-a"}));
  fs::remove(root_ / "GPU-a" / "pipe" / "fake-refuse-start");
  EXPECT_FALSE(sup.Tick(t0 + 2500ms));  // failures 2: 1 s back-off from 2 s
  EXPECT_FALSE(Running("GPU-a"));
  EXPECT_TRUE(sup.Tick(t0 + 3s));
  EXPECT_TRUE(sup.Unhealthy().empty());
  EXPECT_TRUE(Running("GPU-a"));
  EXPECT_TRUE(Running("GPU-b"));  // the other GPU's daemon never noticed
}

// As PID 1 of its container the plugin inherits every daemon `-d` orphans; one that crashes stays
// a zombie unless the plugin reaps it. A subreaper stands in for PID 1 here.
TEST_F(MpsSupervisorTest, ACrashedDaemonIsReapedNotLeftAZombie) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  MpsSupervisor sup(options_, {"GPU-a"});
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(sup.Start(t0).ok());
  const pid_t first = DaemonPid("GPU-a");
  ASSERT_GT(first, 0);
  Crash("GPU-a");  // a zombie of this process now: dead, not gone
  EXPECT_TRUE(fs::exists("/proc/" + std::to_string(first)));
  sup.Tick(t0 + 1s);
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(first)));
  EXPECT_TRUE(Running("GPU-a"));  // and restarted
  sup.StopAll();
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
  for (int i = 0; i < 100 && Running("GPU-a"); ++i) ::usleep(10000);
  ReapOrphans();  // what the quit left
}

TEST_F(MpsSupervisorTest, DaemonThatCannotStartKeepsItsGpuUnhealthy) {
  fs::create_directories(root_ / "GPU-a" / "pipe");
  std::ofstream(root_ / "GPU-a" / "pipe" / "fake-refuse-start") << "1";
  MpsSupervisor sup(options_, {"GPU-a", "GPU-b"});
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(sup.Start(t0).ok());
  EXPECT_EQ(sup.Unhealthy(), (std::set<std::string>{"GPU-a"}));
  for (int i = 1; i <= 5; ++i) EXPECT_FALSE(sup.Tick(t0 + std::chrono::seconds(10 * i)));
  EXPECT_EQ(sup.Unhealthy(), (std::set<std::string>{"GPU-a"}));
  EXPECT_FALSE(Running("GPU-a"));
}

TEST_F(MpsSupervisorTest, AdoptsADaemonAPreviousRunLeft) {
  {
    MpsSupervisor first(options_, {"GPU-a"});
    ASSERT_TRUE(first.Start(Clock::now()).ok());
    // A plugin killed without its shutdown: the daemon outlives it.
    first.Tick(Clock::now());
    const pid_t pid = DaemonPid("GPU-a");
    MpsSupervisor second(options_, {"GPU-a"});
    ASSERT_TRUE(second.Start(Clock::now()).ok());
    EXPECT_TRUE(second.Unhealthy().empty());
    EXPECT_EQ(DaemonPid("GPU-a"), pid);  // not started twice
    second.StopAll();
  }
  EXPECT_FALSE(Running("GPU-a"));
}

TEST_F(MpsSupervisorTest, RefusesWhatNoRetryFixes) {
  MpsOptions relative = options_;
  relative.root = "relative/mps";
  EXPECT_FALSE(MpsSupervisor(relative, {"GPU-a"}).Start(Clock::now()).ok());
  MpsSupervisor bad_uuid(options_, {"../escape"});
  Status s = bad_uuid.Start(Clock::now());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot name an MPS directory"), std::string::npos) << s.message();
  fs::create_directories(root_);
  std::ofstream(root_ / "GPU-a") << "a file where a directory belongs";
  s = MpsSupervisor(options_, {"GPU-a"}).Start(Clock::now());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot create MPS directory " + (root_ / "GPU-a").string()),
            std::string::npos)
      << s.message();
}

TEST(RunCommand, ExitCodesOutputTimeoutAndMissingProgram) {
  auto ok = RunCommand({"sh", "-c", "read x; echo got $x $V; exit 3"}, {{"V", "env"}}, "in\n",
                       5000ms, true);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->exit_code, 3);
  EXPECT_EQ(ok->output, "got in env\n");
  auto slow = RunCommand({"sleep", "5"}, {}, "", 100ms, true);
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(slow->exit_code, -1);
  // A program that exits before reading its input: no SIGPIPE for this process.
  auto early = RunCommand({"sh", "-c", "exit 1"}, {}, std::string(1 << 20, 'x'), 5000ms, true);
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->exit_code, 1);
  auto missing = RunCommand({"/nonexistent/nvidia-cuda-mps-control"}, {}, "", 1000ms, true);
  EXPECT_FALSE(missing.ok());
}

}  // namespace
}  // namespace vgpu::deviceplugin
