// `vgpu top` live on a real pseudo-terminal, through tmux: the screen shows the frame, follows
// the snapshot as it changes, keeps retrying an unreachable monitor, and 'q' or Ctrl-C end the
// command with the terminal's settings as they were.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#ifdef VGPU_TOP_HTTP
#include <httplib.h>
#endif

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// ASan builds start slowly; a frame normally shows within a second.
constexpr auto kScreenTimeout = std::chrono::seconds(20);

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Replaces the file in one step, so that the command never reads half of it.
void WriteAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  fs::rename(tmp, path);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int RunShell(const std::string& command, std::string* out = nullptr) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  const int status = pclose(pipe);
  if (out != nullptr) *out = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kScreenTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return done();
}

// A tmux server of its own (-L: a socket per test, so that tests run in parallel), without the
// user's configuration, its socket under the test's folder (TMUX_TMPDIR), killed at the end.
class Tmux {
 public:
  Tmux(const std::string& dir, const std::string& name)
      : prefix_("env -u TMUX TMUX_TMPDIR=" + Quote(dir) + " tmux -u -f /dev/null -L " +
                Quote(name) + " ") {}
  ~Tmux() { RunShell(prefix_ + "kill-server >/dev/null 2>&1"); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  int operator()(const std::string& args, std::string* out = nullptr) const {
    return RunShell(prefix_ + args + " 2>&1", out);
  }
  [[nodiscard]] std::string Screen() const {
    std::string screen;
    (*this)("capture-pane -p -t top", &screen);
    return screen;
  }
  [[nodiscard]] bool Alive() const { return (*this)("has-session -t top") == 0; }

 private:
  std::string prefix_;
};

class TopTty : public testing::Test {
 protected:
  void SetUp() override {
    if (RunShell("command -v tmux >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "tmux is not installed (Debian package tmux, in scripts/install-deps.sh): "
                      "the pseudo-terminal tests of vgpu top need it";
    }
    const std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string pattern = (fs::temp_directory_path() / "vgpu-top-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    tmux_ = std::make_unique<Tmux>(dir_, "top-" + test);
    snapshot_ = dir_ + "/snapshot.json";
    fixture_ = ReadAll(VGPU_TOP_FIXTURE);
    WriteAtomically(snapshot_, fixture_);
  }
  void TearDown() override {
    tmux_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Starts `vgpu top ARGS` in a 120x30 terminal, from a shell that records the terminal's
  // settings before and after it, and its exit status.
  // `env`: variables for the command alone ("NO_COLOR=1 ").
  void Start(const std::string& args, const std::string& env = "") {
    const std::string script = dir_ + "/run.sh";
    // The shell catches SIGINT (it would die of Ctrl-C otherwise, as the whole foreground group
    // gets it); its child starts with the default action, as from an interactive shell.
    std::ofstream(script) << "trap : INT\n"
                          << "stty -g > " << Quote(dir_ + "/stty.before") << "\n"
                          << env << Quote(VGPU_BINARY) << " top " << args << "\n"
                          << "echo $? > " << Quote(dir_ + "/rc.tmp") << "\n"
                          << "stty -g > " << Quote(dir_ + "/stty.after") << "\n"
                          << "mv " << Quote(dir_ + "/rc.tmp") << " " << Quote(dir_ + "/rc") << "\n";
    ASSERT_EQ((*tmux_)("new-session -d -x 120 -y 30 -s top " + Quote("sh " + Quote(script))), 0);
  }

  // Waits until the screen shows all of `parts`; the screen when it does not.
  ::testing::AssertionResult ScreenShows(std::initializer_list<std::string> parts) {
    std::string screen;
    const bool ok = WaitFor([&] {
      screen = tmux_->Screen();
      return std::all_of(parts.begin(), parts.end(),
                         [&](const std::string& p) { return Contains(screen, p); });
    });
    if (ok) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "screen:\n" << screen;
  }

  // After a quit key: the command ended with `rc`, the session is gone, the terminal restored.
  void ExpectEndedWith(const std::string& rc) {
    const std::string rc_file = dir_ + "/rc";
    ASSERT_TRUE(WaitFor([&] { return fs::exists(rc_file); })) << "still running; screen:\n"
                                                              << tmux_->Screen();
    EXPECT_EQ(ReadAll(rc_file), rc + "\n");
    EXPECT_TRUE(WaitFor([&] { return !tmux_->Alive(); })) << "the session did not end";
    const std::string before = ReadAll(dir_ + "/stty.before");
    EXPECT_FALSE(before.empty());
    EXPECT_EQ(ReadAll(dir_ + "/stty.after"), before) << "terminal settings not restored";
  }

  std::string dir_;
  std::string snapshot_;
  std::string fixture_;
  std::unique_ptr<Tmux> tmux_;
};

TEST_F(TopTty, ShowsFollowsTheSnapshotAndQuitsOnQ) {
  Start("--file " + Quote(snapshot_) + " --interval 200ms");
  EXPECT_TRUE(ScreenShows({"node gpu-node-1", "0 GPU-8f3a2c1d NVIDIA-H100", "default/train-0/main",
                           "?/5f0c3a52-1d2e-4f3a-8b4c-5d6e7f8a9b0c/worker",
                           "every 200ms from " + snapshot_}));
  // One frame on the screen, from its first line (cleared, not scrolled).
  const std::string screen = tmux_->Screen();
  EXPECT_EQ(screen.rfind("node gpu-node-1", 0), 0u) << screen;

  std::string changed = fixture_;
  changed.replace(changed.find("train-0"), 7, "train-9");
  changed.replace(changed.find("\"utilization_percent\": 45"), 25, "\"utilization_percent\": 77");
  WriteAtomically(snapshot_, changed);
  EXPECT_TRUE(ScreenShows({"default/train-9/main", "77%"}));
  EXPECT_FALSE(Contains(tmux_->Screen(), "train-0"));

  ASSERT_EQ((*tmux_)("send-keys -t top q"), 0);
  ExpectEndedWith("0");
}

// On a terminal a person reads bars and colours; NO_COLOR (no-color.org) keeps the bars and drops
// the colours, --plain gives the table a pipe gets (top_command_test: no escape code there).
TEST_F(TopTty, BarsAndColoursOnATerminalNotWithNoColorOrPlain) {
  struct Case {
    const char* name;
    std::string env;
    std::string flags;
    bool bars;
    bool colour;
  };
  const Case cases[] = {
      {"terminal", "TERM=xterm-256color ", "", true, true},
      {"NO_COLOR=1", "TERM=xterm-256color NO_COLOR=1 ", "", true, false},
      {"--no-color", "TERM=xterm-256color ", " --no-color", true, false},
      {"--plain", "TERM=xterm-256color ", " --plain", false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    (*tmux_)("kill-session -t top >/dev/null 2>&1");
    fs::remove(dir_ + "/rc");
    Start("--file " + Quote(snapshot_) + " --interval 200ms" + c.flags, c.env);
    ASSERT_TRUE(ScreenShows({"0 GPU-8f3a2c1d NVIDIA-H100", "default/train-0/main"}));
    std::string screen;  // with the cells' attributes as escape sequences
    (*tmux_)("capture-pane -p -e -t top", &screen);
    EXPECT_EQ(Contains(screen, "\u2588"), c.bars) << screen;  // a bar's full cell
    // Green, yellow or red bars and the problem line; bold headers.
    const bool coloured = Contains(screen, "\x1b[32m") || Contains(screen, "\x1b[33m") ||
                          Contains(screen, "\x1b[31m") || Contains(screen, "\x1b[1m");
    EXPECT_EQ(coloured, c.colour) << screen;
    ASSERT_EQ((*tmux_)("send-keys -t top q"), 0);
    ExpectEndedWith("0");
  }
}

TEST_F(TopTty, CtrlCQuitsAndRestoresTheTerminal) {
  Start("--file " + Quote(snapshot_) + " --interval 200ms");
  ASSERT_TRUE(ScreenShows({"0 GPU-8f3a2c1d"}));
  ASSERT_EQ((*tmux_)("send-keys -t top C-c"), 0);
  ExpectEndedWith("0");
}

TEST_F(TopTty, KeepsRetryingAnUnreadableSource) {
  const std::string missing = dir_ + "/later.json";
  Start("--file " + Quote(missing) + " --interval 200ms");
  EXPECT_TRUE(
      ScreenShows({"error: cannot read snapshot file " + missing, "(retrying every 200ms)"}));
  std::this_thread::sleep_for(milliseconds(600));
  EXPECT_TRUE(tmux_->Alive());
  WriteAtomically(missing, fixture_);
  EXPECT_TRUE(ScreenShows({"0 GPU-8f3a2c1d NVIDIA-H100", "every 200ms"}));
  ASSERT_EQ((*tmux_)("send-keys -t top q"), 0);
  ExpectEndedWith("0");
}

#ifdef VGPU_TOP_HTTP
// A TCP port nothing listens on (bound, then closed again).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

TEST_F(TopTty, ShowsTheErrorWhileTheMonitorIsDownAndRecovers) {
  const int port = ClosedPort();
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  Start("--url " + url + " --interval 200ms");
  // The error is wrapped, not cut: its last words are on the screen too.
  EXPECT_TRUE(ScreenShows({"error: cannot reach the node monitor at " + url + "/api/v1/snapshot",
                           "connection refused", "200ms)"}));
  std::this_thread::sleep_for(milliseconds(600));
  ASSERT_TRUE(tmux_->Alive());

  httplib::Server monitor;
  const std::string body = fixture_;
  monitor.Get("/api/v1/snapshot", [&body](const httplib::Request&, httplib::Response& res) {
    res.set_content(body, "application/json");
  });
  ASSERT_TRUE(monitor.bind_to_port("127.0.0.1", port));
  std::thread serve([&] { monitor.listen_after_bind(); });
  struct Stop {
    httplib::Server& server;
    std::thread& thread;
    ~Stop() {
      server.stop();
      thread.join();
    }
  } stop{monitor, serve};
  EXPECT_TRUE(ScreenShows({"0 GPU-8f3a2c1d NVIDIA-H100", "every 200ms from " + url}));
  EXPECT_FALSE(Contains(tmux_->Screen(), "error:"));
  ASSERT_EQ((*tmux_)("send-keys -t top q"), 0);
  ExpectEndedWith("0");
}
#endif

}  // namespace
