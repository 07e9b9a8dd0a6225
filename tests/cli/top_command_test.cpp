// `vgpu top --once` and `--json`: in process through RunCli (files, a monitor served over HTTP,
// errors), and as the built binary a user's shell runs.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/monitor/snapshot_json.h"
#include "run_cli.h"

#ifdef VGPU_TOP_HTTP
#include <httplib.h>
#endif

namespace {

using vgpu::cli::testing::CliResult;
using vgpu::cli::testing::RunVgpu;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

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

const std::string kFixture = VGPU_TOP_FIXTURE;

// The lines of the fixture's frame at 80 columns that identify it.
const char* const kGpuLine = "  0 GPU-8f3a2c1d NVIDIA-H100  12.3GiB/80.0GiB   15%   45%";
const char* const kContainerLine =
    "  default/train-0/main 3.0GiB/4.0GiB  75% 30%/50% shared  default     2 0.2s ago";

TEST(TopCommand, OnceFromFile) {
  const CliResult r = RunVgpu({"top", "--once", "--width", "80", "--file", kFixture});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_GE(lines.size(), 6u) << r.out;
  EXPECT_EQ(lines[0], "node gpu-node-1  2025-11-20 12:00:03 UTC  3 GPUs  3 containers");
  EXPECT_EQ(lines[4], kGpuLine);
  EXPECT_EQ(lines[5], kContainerLine);
  EXPECT_EQ(lines.back(), "  no containers");
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "no escape sequences outside live mode";
}

TEST(TopCommand, JsonFromFileIsTheSnapshot) {
  const CliResult r = RunVgpu({"top", "--json", "--file", kFixture});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, ReadAll(kFixture));
  auto snapshot = vgpu::monitor::SnapshotFromJson(r.out);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  EXPECT_EQ(snapshot->node, "gpu-node-1");
  EXPECT_EQ(snapshot->gpus.size(), 3u);
}

TEST(TopCommand, FileErrorsExitOneNamingTheFile) {
  const std::string dir = testing::TempDir();
  const std::string bad = dir + "/top-command-bad.json";
  std::ofstream(bad) << R"({"node": "n", "gpus": [{"index": "zero"}]})";
  const std::string missing = dir + "/top-command-missing.json";
  for (const std::string& path : {bad, missing}) {
    for (const char* mode : {"--once", "--json"}) {
      const CliResult r = RunVgpu({"top", mode, "--file", path});
      EXPECT_EQ(r.rc, 1) << path;
      EXPECT_EQ(r.out, "");
      EXPECT_TRUE(Contains(r.err, "vgpu top: ") && Contains(r.err, path)) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
  EXPECT_TRUE(Contains(RunVgpu({"top", "--once", "--file", bad}).err, "index is not a number"));
  // A file cut short: where and what, without the JSON library's error id.
  const std::string cut = dir + "/top-command-cut.json";
  std::ofstream(cut) << R"({"node": 3)";
  const std::string err = RunVgpu({"top", "--once", "--file", cut}).err;
  EXPECT_TRUE(Contains(err, cut + ": snapshot is not valid JSON: parse error at line 1, column 11"))
      << err;
  EXPECT_FALSE(Contains(err, "json.exception")) << err;
}

TEST(TopCommand, UnreachableMonitorExitsOneNamingTheUrl) {
  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort());
  for (const char* mode : {"--once", "--json"}) {
    const CliResult r = RunVgpu({"top", mode, "--url", url});
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(Contains(r.err, url + "/api/v1/snapshot")) << r.err;
#ifdef VGPU_TOP_HTTP
    EXPECT_TRUE(Contains(r.err, "VGPU_MONITOR_URL")) << r.err;
#endif
  }
  // The environment names the monitor when --url does not.
  setenv("VGPU_MONITOR_URL", (url + "/from-env").c_str(), 1);
  const CliResult r = RunVgpu({"top", "--once"});
  unsetenv("VGPU_MONITOR_URL");
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(Contains(r.err, url + "/from-env")) << r.err;
}

TEST(TopCommand, UsageErrors) {
  const std::vector<std::vector<std::string>> cases = {
      {"top", "--interval", "10ms"},
      {"top", "--interval", "soon"},
      {"top", "--url", "ftp://x", "--once"},
      {"top", "--url", "http://x", "--file", kFixture},
      {"top", "--width", "5"},
  };
  for (const auto& args : cases) {
    const CliResult r = RunVgpu(args);
    EXPECT_EQ(r.rc, 2) << args[1] << " " << args[2];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(TopCommand, ListedInHelp) {
  const CliResult r = RunVgpu({"--help"});
  EXPECT_TRUE(Contains(r.out, "top")) << r.out;
}

#ifdef VGPU_TOP_HTTP
// A stand-in for vgpu-monitor's API.
class FakeMonitor {
 public:
  FakeMonitor(int status, const std::string& body) {
    server_.Get("/api/v1/snapshot",
                [status, body](const httplib::Request&, httplib::Response& res) {
                  res.status = status;
                  res.set_content(body, "application/json");
                });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FakeMonitor() {
    server_.stop();
    thread_.join();
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(TopCommand, OnceAndJsonFromTheMonitor) {
  const std::string body = ReadAll(kFixture);
  FakeMonitor monitor(200, body);
  const CliResult once = RunVgpu({"top", "--once", "--width", "80", "--url", monitor.url()});
  ASSERT_EQ(once.rc, 0) << once.err;
  const std::vector<std::string> lines = Lines(once.out);
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[4], kGpuLine);
  EXPECT_EQ(lines[5], kContainerLine);
  const CliResult json = RunVgpu({"top", "--json", "--url", monitor.url()});
  ASSERT_EQ(json.rc, 0) << json.err;
  EXPECT_EQ(json.out, body);
}

TEST(TopCommand, MonitorErrorsExitOne) {
  {
    FakeMonitor monitor(500, "tick failed");
    const CliResult r = RunVgpu({"top", "--once", "--url", monitor.url()});
    EXPECT_EQ(r.rc, 1);
    EXPECT_TRUE(Contains(r.err, monitor.url() + "/api/v1/snapshot answered HTTP 500: tick failed"))
        << r.err;
  }
  {
    FakeMonitor monitor(200, "[1, 2]");
    const CliResult r = RunVgpu({"top", "--json", "--url", monitor.url()});
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(Contains(r.err, monitor.url() + "/api/v1/snapshot: snapshot is not an object"))
        << r.err;
  }
}
#endif

// The binary as a shell runs it: exit status and output.
struct ShellResult {
  int rc;
  std::string out;
};
ShellResult Shell(const std::string& command) {
  ShellResult r{-1, ""};
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(TopBinary, OnceAndJson) {
  const std::string vgpu = VGPU_BINARY;
  // Not a terminal: COLUMNS gives the width.
  ShellResult once = Shell("COLUMNS=80 " + vgpu + " top --once --file '" + kFixture + "' 2>&1");
  EXPECT_EQ(once.rc, 0) << once.out;
  EXPECT_TRUE(Contains(once.out, std::string(kGpuLine) + "\n")) << once.out;
  EXPECT_TRUE(Contains(once.out, std::string(kContainerLine) + "\n")) << once.out;

  ShellResult json = Shell(vgpu + " top --json --file '" + kFixture + "' 2>&1");
  EXPECT_EQ(json.rc, 0) << json.out;
  EXPECT_EQ(json.out, ReadAll(kFixture));

  const std::string url = "http://127.0.0.1:" + std::to_string(ClosedPort());
  ShellResult down = Shell(vgpu + " top --once --url " + url + " 2>&1");
  EXPECT_EQ(down.rc, 1) << down.out;
#ifdef VGPU_TOP_HTTP
  EXPECT_TRUE(Contains(down.out, "cannot reach the node monitor at " + url)) << down.out;
#else
  EXPECT_TRUE(Contains(down.out, "built without an HTTP client")) << down.out;
#endif
}

}  // namespace
