// The real vgpu-device-plugin binary with --advertise-extended-resources against the in-process
// API server (its status subresource, JSON merge patches), then restarted without it: the
// node's vGPU memory and cores appear in status.capacity next to what kubelet and an admin put
// there, and go again, with nothing else touched.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "fake_kubelet.h"
#include "sim/apiserver/api_server.h"

extern char** environ;

namespace vgpu::deviceplugin {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

class ExtendedResourcesBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vgpu-dp-extres-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "plugins");
    auto server = sim::ApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    api_ = std::move(*server);
    std::ofstream(dir_ / "kubeconfig")
        << "apiVersion: v1\nkind: Config\n"
        << "clusters:\n- name: sim\n  cluster:\n    server: " << api_->url() << "\n"
        << "users:\n- name: u\n  user:\n    token: t\n"
        << "contexts:\n- name: c\n  context:\n    cluster: sim\n    user: u\n"
        << "current-context: c\n";
    // As kubelet reports the node, plus an extended resource an admin advertised by hand.
    ASSERT_TRUE(api_->Seed("nodes", {{"metadata", {{"name", "n1"}}},
                                     {"status",
                                      {{"capacity", {{"cpu", "8"}, {"example.com/dongle", "4"}}},
                                       {"allocatable", {{"cpu", "7"}, {"example.com/dongle", "4"}}},
                                       {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}})
                    .ok());
    kubelet_ = std::make_unique<FakeKubelet>((dir_ / "plugins" / "kubelet.sock").string());
  }

  void TearDown() override {
    StopPlugin();
    kubelet_.reset();
    if (api_) api_->Stop();
    fs::remove_all(dir_);
  }

  void StartPlugin(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        VGPU_DEVICE_PLUGIN_BINARY,
        "--node-name=n1",
        "--kubeconfig=" + (dir_ / "kubeconfig").string(),
        "--device-plugin-path=" + (dir_ / "plugins").string(),
        "--fake-gpus=count=2,memory=40960,model=NVIDIA A100-SXM4-40GB,uuids=GPU-a;GPU-b",
        "--device-memory-scaling=1.5",
        "--hook-path=" + (dir_ / "hook").string(),
        "--lock-dir=" + (dir_ / "lock").string(),
        "--report-interval-seconds=1",
    };
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // Its log (stderr) to a file, appended across restarts, for the assertions on its words.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, (dir_ / "plugin.log").c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ASSERT_EQ(rc, 0);
  }

  std::string PluginLog() {
    std::ifstream in(dir_ / "plugin.log");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  void StopPlugin() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }

  json Node() {
    auto node = api_->Get("nodes", "", "n1");
    EXPECT_TRUE(node.ok()) << node.status().ToString();
    return node.ok() ? *node : json::object();
  }

  // Waits (generously: not a latency assertion) until status.<field>[name] reads `want`.
  bool WaitStatus(const std::string& field, const std::string& name, const std::string& want) {
    for (int i = 0; i < 600; ++i) {
      if (At(Node(), field, name) == want) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  static std::string At(const json& node, const std::string& field, const std::string& name) {
    const json m = node.value("status", json::object()).value(field, json::object());
    return m.contains(name) ? m[name].get<std::string>() : "<absent>";
  }
  static std::string Marker(const json& node) {
    return node["metadata"]
        .value("annotations", json::object())
        .value("vgpu.io/extended-resources", "<absent>");
  }
  static void ExpectKubeletAndAdminFieldsKept(const json& node) {
    EXPECT_EQ(At(node, "capacity", "cpu"), "8");
    EXPECT_EQ(At(node, "allocatable", "cpu"), "7");
    EXPECT_EQ(At(node, "capacity", "example.com/dongle"), "4");
    EXPECT_EQ(At(node, "allocatable", "example.com/dongle"), "4");
    EXPECT_EQ(node["status"]["conditions"].size(), 1u);
  }

  fs::path dir_;
  std::unique_ptr<sim::ApiServer> api_;
  std::unique_ptr<FakeKubelet> kubelet_;
  pid_t pid_ = -1;
};

TEST_F(ExtendedResourcesBinaryTest, AdvertisedWithTheFlagWithdrawnWithoutIt) {
  StartPlugin({"--advertise-extended-resources"});
  // 2 GPUs x 40960 MiB x 1.5 (memory scaling, as registered); 2 x 100 cores.
  ASSERT_TRUE(WaitStatus("capacity", "nvidia.com/gpumem", "122880"))
      << At(Node(), "capacity", "nvidia.com/gpumem") << "\n"
      << PluginLog();
  json node = Node();
  EXPECT_EQ(At(node, "capacity", "nvidia.com/gpucores"), "200");
  EXPECT_EQ(Marker(node), "nvidia.com/gpucores,nvidia.com/gpumem");
  ExpectKubeletAndAdminFieldsKept(node);
  StopPlugin();

  // What kubelet's next status update would do: allocatable from capacity.
  node = Node();
  json kubelet = {{"status",
                   {{"allocatable",
                     {{"nvidia.com/gpumem", At(node, "capacity", "nvidia.com/gpumem")},
                      {"nvidia.com/gpucores", At(node, "capacity", "nvidia.com/gpucores")}}}}}};
  ASSERT_TRUE(
      api_->store()
          .Patch(*sim::FindResource("v1", "nodes"), "", "n1", sim::PatchType::kMerge, kubelet)
          .ok());

  StartPlugin({});
  ASSERT_TRUE(WaitStatus("capacity", "nvidia.com/gpumem", "<absent>"));
  ASSERT_TRUE(WaitStatus("allocatable", "nvidia.com/gpucores", "<absent>"));
  node = Node();
  EXPECT_EQ(At(node, "capacity", "nvidia.com/gpucores"), "<absent>");
  EXPECT_EQ(At(node, "allocatable", "nvidia.com/gpumem"), "<absent>");
  for (int i = 0; i < 50 && Marker(Node()) != "<absent>"; ++i) std::this_thread::sleep_for(100ms);
  EXPECT_EQ(Marker(Node()), "<absent>");
  ExpectKubeletAndAdminFieldsKept(Node());
}

TEST_F(ExtendedResourcesBinaryTest, ANameKubernetesWouldRefuseFailsTheStart) {
  std::ofstream(dir_ / "device-config.yaml") << "nvidia:\n  resourceCoreName: gpucores\n";
  StartPlugin({"--advertise-extended-resources",
               "--device-config=" + (dir_ / "device-config.yaml").string()});
  int status = 0;
  ASSERT_EQ(::waitpid(pid_, &status, 0), pid_);
  pid_ = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_NE(PluginLog().find("--advertise-extended-resources: cannot advertise the cores resource "
                             "\\\"gpucores\\\" as a node extended resource"),
            std::string::npos)
      << PluginLog();
  EXPECT_EQ(At(Node(), "capacity", "gpucores"), "<absent>");
}

}  // namespace
}  // namespace vgpu::deviceplugin
