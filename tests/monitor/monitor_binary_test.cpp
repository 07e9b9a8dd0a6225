// The vgpu-monitor binary as a node runs it, without Kubernetes: a temporary hook directory, the
// fake NVML (testing/fakes) for host GPU figures, the listener on an ephemeral port read back from
// its start-up line; then the three endpoints, promtool on /metrics, and the exit codes of bad
// flags (one logfmt error line each).

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/base/log.h"
#include "core/monitor/snapshot_json.h"
#include "tests/core/prom/promtool_check.h"
#include "tests/monitor/monitor_process.h"

namespace vgpu::monitor {
namespace {

// `text` as a logfmt line carries it inside a quoted value (a quote as \", core/base/log.h).
std::string Logged(const std::string& text) {
  std::string v;
  log::AppendValue(v, text);
  return v.front() == '"' ? v.substr(1, v.size() - 2) : v;
}

class MonitorBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vgpu-monitor-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "vgpu" / "containers");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Flags and environment of a node without Kubernetes, two fake GPUs.
  std::vector<std::string> Args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> a = {
        "--no-kube",      "--node-name", "test-node", "--vgpu-dir", (dir_ / "vgpu").string(),
        "--metrics-bind", "127.0.0.1:0", "--tick",    "100"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::vector<std::string> Env(std::vector<std::string> extra = {}) const {
    std::vector<std::string> e = {std::string("LD_LIBRARY_PATH=") + VGPU_FAKE_DRIVER_DIR,
                                  "VGPU_FAKE_GPUS=2",
                                  "VGPU_FAKE_STATE_DIR=" + (dir_ / "fake-state").string()};
    e.insert(e.end(), extra.begin(), extra.end());
    return e;
  }
  // Runs the binary to its end; returns {exit code, stderr}.
  std::pair<int, std::string> RunToEnd(std::vector<std::string> args,
                                       std::vector<std::string> env) {
    MonitorProcess p(dir_, std::move(args), std::move(env));
    EXPECT_TRUE(p.spawned());
    if (!p.Exited(20s)) return {-1, p.stderr_text()};
    return {p.exit_code(), p.stderr_text()};
  }

  fs::path dir_;
};

TEST_F(MonitorBinaryTest, ServesMetricsSnapshotAndHealth) {
  MonitorProcess p(dir_, Args(), Env());
  ASSERT_TRUE(p.spawned());
  const int port = p.WaitForPort(30s);
  ASSERT_GT(port, 0) << p.stderr_text();
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(10, 0);

  // Healthy once the first tick has run (NodeMonitor::Start runs one before it returns).
  const auto end = std::chrono::steady_clock::now() + 30s;
  int health = 0;
  while (std::chrono::steady_clock::now() < end) {
    auto res = http.Get("/healthz");
    health = res ? res->status : 0;
    if (health == 200) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(health, 200) << p.stderr_text();

  auto snap = http.Get("/api/v1/snapshot");
  ASSERT_TRUE(snap);
  EXPECT_EQ(snap->status, 200);
  Result<NodeSnapshot> s = SnapshotFromJson(snap->body);
  ASSERT_TRUE(s.ok()) << s.status().ToString() << "\n" << snap->body;
  EXPECT_EQ(s->node, "test-node");
  EXPECT_GT(s->time_unix_ms, 0);
  ASSERT_EQ(s->gpus.size(), 2U) << snap->body;
  EXPECT_EQ(s->gpus[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(s->gpus[1].uuid, "GPU-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(s->gpus[0].memory_total_bytes, 16ULL << 30);

  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  for (
      const char* want :
      {R"(hami_host_gpu_memory_used_bytes{device_index="0",device_type="NVIDIA-NVIDIA H100 80GB HBM3",device_uuid="GPU-00000000-0000-0000-0000-000000000000",node="test-node",zone="vGPU"} )",
       R"(hami_host_gpu_memory_used_bytes{device_index="1",)", "\nhami_build_info{",
       R"(vgpu_monitor_unknown_pod_containers{zone="vGPU"} 0)"}) {
    EXPECT_NE(metrics->body.find(want), std::string::npos) << want << "\n" << metrics->body;
  }
  if (const auto check = prom::testing::PromtoolCheck(metrics->body)) {
    EXPECT_EQ(check->exit_code, 0) << check->output;
    EXPECT_EQ(check->output, "");
  } else {
    // The endpoints are checked all the same; only the format check is left out.
    (void)std::fprintf(stderr, "promtool not installed (Debian package prometheus): not run\n");
  }

  p.Terminate();
  ASSERT_TRUE(p.Exited(20s)) << p.stderr_text();
  EXPECT_EQ(p.exit_code(), 0) << p.stderr_text();
}

TEST_F(MonitorBinaryTest, HamisSpellingsAreAccepted) {
  // HAMi's chart: -v=4, --metrics-bind-address, --legacy-metrics=true, HOOK_PATH, NODE_NAME,
  // HAMI_RESYNC_INTERVAL.
  MonitorProcess p(dir_,
                   {"--no-kube", "-v=4", "--metrics-bind-address=127.0.0.1:0",
                    "--legacy-metrics=true", "--tick", "100"},
                   Env({"NODE_NAME=hami-node", "HOOK_PATH=" + (dir_ / "vgpu").string(),
                        "HAMI_RESYNC_INTERVAL=1m30s"}));
  ASSERT_TRUE(p.spawned());
  const int port = p.WaitForPort(30s);
  ASSERT_GT(port, 0) << p.stderr_text();
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(10, 0);
  std::string body;
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < end) {
    auto res = http.Get("/metrics");
    if (res && res->body.find("HostGPUMemoryUsage{") != std::string::npos) {
      body = res->body;
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(body.find(R"(nodeid="hami-node")"), std::string::npos) << body;
  EXPECT_NE(p.stderr_text().find((dir_ / "vgpu").string()), std::string::npos) << p.stderr_text();
  p.Terminate();
  ASSERT_TRUE(p.Exited(20s));
  EXPECT_EQ(p.exit_code(), 0) << p.stderr_text();
}

TEST_F(MonitorBinaryTest, BadInputExitsWithCode2AndSaysWhy) {
  const struct {
    std::vector<std::string> extra_args;
    std::vector<std::string> extra_env;
    const char* message;
  } cases[] = {
      {{"--cleanup-grace", "5x"}, {}, "--cleanup-grace: duration \"5x\""},
      {{}, {"HAMI_RESYNC_INTERVAL=soon"}, "HAMI_RESYNC_INTERVAL: duration \"soon\""},
      {{"--cleanup-grace", "-1m"}, {}, "--cleanup-grace must not be negative"},
      {{"--tick", "0"}, {}, "--tick must be a positive number"},
      {{"--metrics-bind", "localhost"}, {}, "--metrics-bind: listen address \"localhost\""},
      {{"--no-such-flag"}, {}, "--no-such-flag"},
      {{"--tick", "fast"}, {}, "--tick"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = Args();
    // The case's flags come last, so they win over Args()'s.
    args.insert(args.end(), c.extra_args.begin(), c.extra_args.end());
    auto [code, err] = RunToEnd(args, Env(c.extra_env));
    EXPECT_EQ(code, 2) << c.message << "\n" << err;
    EXPECT_NE(err.find("level=error msg=\"bad command line\""), std::string::npos) << err;
    EXPECT_NE(err.find(Logged(c.message)), std::string::npos) << c.message << "\n" << err;
  }
  // Without --no-kube the node's name is required.
  auto [code, err] = RunToEnd({"--metrics-bind", "127.0.0.1:0"}, Env());
  EXPECT_EQ(code, 2) << err;
  EXPECT_NE(err.find("--node-name (or $NODE_NAME) is required"), std::string::npos) << err;
}

TEST_F(MonitorBinaryTest, HelpExitsZero) {
  auto [code, err] = RunToEnd({"--help"}, Env());
  EXPECT_EQ(code, 0) << err;
}

}  // namespace
}  // namespace vgpu::monitor
