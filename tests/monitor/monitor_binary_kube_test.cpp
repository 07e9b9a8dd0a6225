// The vgpu-monitor binary with Kubernetes, end to end: the in-process API server (sim/apiserver)
// through a kubeconfig, a container directory laid out as the device plugin lays it out with a
// real process holding GPU memory through libvgpu.so against the fake driver. The pod's names must
// reach the per-container metrics (the pod directory's watch → the engine → the page), and the
// directory must go once the pod is deleted and the grace period has passed.

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "process_runner.h"
#include "sim/apiserver/api_server.h"
#include "sim/apiserver/object_store.h"
#include "tests/core/prom/promtool_check.h"
#include "tests/monitor/monitor_process.h"

namespace vgpu::monitor {
namespace {

using nlohmann::json;

class MonitorBinaryKubeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vgpu-monitor-kube-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "vgpu" / "containers");
    fs::create_directories(dir_ / "gpu");
    auto server = sim::ApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    api_ = std::move(server).value();
    std::ofstream(dir_ / "kubeconfig")
        << "current-context: c\ncontexts: [{name: c, context: {cluster: k}}]\n"
           "clusters: [{name: k, cluster: {server: '"
        << api_->url() << "'}}]\n";
  }
  void TearDown() override {
    holder_.reset();
    api_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Seeds a pod bound to `node`; returns its uid.
  std::string SeedPod(const std::string& ns, const std::string& name, const std::string& node) {
    auto pod = api_->Seed(
        "pods",
        {{"metadata", {{"name", name}, {"namespace", ns}}},
         {"spec", {{"nodeName", node}, {"containers", {{{"name", "main"}, {"image", "x"}}}}}},
         {"status", {{"phase", "Running"}}}});
    EXPECT_TRUE(pod.ok()) << pod.status().ToString();
    return pod.ok() ? (*pod)["metadata"]["uid"].get<std::string>() : "";
  }

  // A process of container `<uid>_main` holding a context and 2 MiB under a 100 MiB limit.
  void HoldMemory(const std::string& uid) {
    const fs::path container = dir_ / "vgpu" / "containers" / (uid + "_main");
    fs::create_directories(container);
    const std::map<std::string, std::string> env = {
        {"LD_PRELOAD", VGPU_LIBVGPU_SO},
        {"LD_LIBRARY_PATH", VGPU_FAKE_DRIVER_DIR},
        {"VGPU_FAKE_STATE_DIR", (dir_ / "gpu").string()},
        {"VGPU_FAKE_CONTEXT_MEMORY", "10m"},
        {"VGPU_FAKE_MODULE_MEMORY", "0"},
        {"CUDA_DEVICE_MEMORY_SHARED_CACHE", (container / "r.cache").string()},
        {"CUDA_DEVICE_MEMORY_LIMIT", "100m"}};
    holder_ = std::make_unique<testing::Child>(std::vector<std::string>{VGPU_PROBE, "hold"}, env,
                                               /*pipe_stdin=*/true);
    ASSERT_EQ(holder_->ReadLine(), "holding") << holder_->ReadAllStderr();
  }

  fs::path dir_;
  std::unique_ptr<sim::ApiServer> api_;
  std::unique_ptr<testing::Child> holder_;
};

TEST_F(MonitorBinaryKubeTest, PodNamesReachTheMetricsAndGoneDirectoriesAreRemoved) {
  const std::string uid = SeedPod("team", "train", "node-1");
  SeedPod("team", "elsewhere", "node-2");
  HoldMemory(uid);

  MonitorProcess p(dir_,
                   {"--kubeconfig", (dir_ / "kubeconfig").string(), "--node-name", "node-1",
                    "--vgpu-dir", (dir_ / "vgpu").string(), "--metrics-bind", "127.0.0.1:0",
                    "--tick", "100", "--cleanup-grace", "1s"},
                   {std::string("LD_LIBRARY_PATH=") + VGPU_FAKE_DRIVER_DIR,
                    "VGPU_FAKE_STATE_DIR=" + (dir_ / "gpu").string()});
  ASSERT_TRUE(p.spawned());
  const int port = p.WaitForPort(30s);
  ASSERT_GT(port, 0) << p.stderr_text();
  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(10, 0);

  const std::string labels =
      R"({container="main",device_uuid="GPU-00000000-0000-0000-0000-000000000000",namespace="team",pod="train",vdevice_index="0",zone="vGPU"})";
  std::string page;
  const auto end = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < end) {
    auto res = http.Get("/metrics");
    if (res && res->body.find("hami_vgpu_memory_used_bytes" + labels) != std::string::npos) {
      page = res->body;
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(page.empty()) << p.stderr_text();
  EXPECT_NE(page.find("hami_vgpu_memory_limit_bytes" + labels + " 104857600\n"), std::string::npos)
      << page;
  EXPECT_NE(page.find("hami_vgpu_memory_buffer_bytes" + labels + " 2097152\n"), std::string::npos)
      << page;
  EXPECT_NE(page.find(R"(vgpu_monitor_unknown_pod_containers{zone="vGPU"} 0)"), std::string::npos)
      << page;
  if (const auto check = prom::testing::PromtoolCheck(page)) {
    EXPECT_EQ(check->exit_code, 0) << check->output;
  }

  // The pod goes; once its process has ended and the grace period has passed, so does the
  // directory (the pod view is synced, so its absence is believed).
  holder_->CloseStdin();
  (void)holder_->Wait();
  ASSERT_TRUE(api_->store().Delete(*sim::FindResource("v1", "pods"), "team", "train").ok());
  const fs::path container = dir_ / "vgpu" / "containers" / (uid + "_main");
  const auto gone_by = std::chrono::steady_clock::now() + 30s;
  while (fs::exists(container) && std::chrono::steady_clock::now() < gone_by) {
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_FALSE(fs::exists(container)) << p.stderr_text();

  p.Terminate();
  ASSERT_TRUE(p.Exited(20s)) << p.stderr_text();
  EXPECT_EQ(p.exit_code(), 0) << p.stderr_text();
}

}  // namespace
}  // namespace vgpu::monitor
