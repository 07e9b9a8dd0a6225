// The plugin library in MPS mode over fake GPUs and the fake nvidia-cuda-mps-control
// (testing/fakes/mps): every GPU registered as mps, one daemon per GPU before the first
// ListAndWatch, a daemon that cannot be kept up turns its GPU Unhealthy (ListAndWatch and the
// inventory) and back once it restarts, Stop quits the daemons.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "api.grpc.pb.h"
#include "core/codec/node_inventory.h"
#include "deviceplugin/fake_gpus.h"
#include "deviceplugin/plugin.h"
#include "memory_cluster.h"

namespace vgpu::deviceplugin {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string Inventory(testing::MemoryCluster& cluster) {
  auto node = cluster.Node("n1");
  auto inv = codec::DecodeInventory(
      node["metadata"]["annotations"].value("hami.io/node-nvidia-register", ""));
  if (!inv.ok()) return "<bad>";
  std::string out;
  for (const auto& d : *inv) out += d.id + "=" + d.mode + (d.health ? ",ok;" : ",bad;");
  return out;
}

std::map<std::string, std::string> HealthByGpu(const v1beta1::ListAndWatchResponse& r) {
  std::map<std::string, std::string> out;
  for (const auto& d : r.devices()) out[GpuOfReplica(d.id())] = d.health();
  return out;
}

pid_t DaemonPid(const fs::path& mps, const std::string& uuid) {
  std::ifstream f(mps / uuid / "pipe" / "fake-control.pid");
  pid_t pid = 0;
  f >> pid;
  return pid;
}

// Running and not a zombie: where PID 1 does not reap (containers), a killed daemon whose parent
// is gone stays a zombie that kill(pid, 0) still reaches.
bool Running(const fs::path& mps, const std::string& uuid) {
  const pid_t pid = DaemonPid(mps, uuid);
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(") ");
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

TEST(DevicePluginMps, DaemonPerGpuHealthFollowsTheDaemonAndStopQuitsThem) {
  const fs::path dir = fs::temp_directory_path() / ("vgpu-dp-mps-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path mps = dir / "mps";
  auto cluster_owned = std::make_unique<testing::MemoryCluster>();
  testing::MemoryCluster& cluster = *cluster_owned;
  cluster.PutNode({{"metadata", {{"name", "n1"}, {"annotations", nlohmann::json::object()}}}});

  PluginOptions o;
  o.node_name = "n1";
  o.device_plugin_path = dir.string();
  o.split.split_count = 2;
  o.split.mode = "mps";
  o.response.operating_mode = "mps";
  o.response.mps_root = mps.string();
  o.mps.root = mps.string();
  o.mps.control = VGPU_FAKE_MPS_CONTROL;
  o.mps.backoff = {100ms, 200ms, 30000ms};
  o.register_with_kubelet = false;
  o.install_hook = false;
  o.health_probe_interval = 50ms;
  o.kubelet_poll_interval = 20ms;
  {
    DevicePlugin plugin(
        o, std::move(cluster_owned),
        std::make_unique<FakeGpuBackend>(*ParseFakeGpus("uuids=GPU-a;GPU-b", "n1")));
    ASSERT_TRUE(plugin.Start().ok());
    EXPECT_EQ(Inventory(cluster), "GPU-a=mps,ok;GPU-b=mps,ok;");
    EXPECT_TRUE(Running(mps, "GPU-a"));
    EXPECT_TRUE(Running(mps, "GPU-b"));

    auto channel =
        grpc::CreateChannel("unix://" + plugin.SocketPath(), grpc::InsecureChannelCredentials());
    auto stub = v1beta1::DevicePlugin::NewStub(channel);
    grpc::ClientContext ctx;
    auto stream = stub->ListAndWatch(&ctx, v1beta1::Empty());
    v1beta1::ListAndWatchResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_EQ(HealthByGpu(resp),
              (std::map<std::string, std::string>{{"GPU-a", "Healthy"}, {"GPU-b", "Healthy"}}));

    // GPU-b's daemon dies and will not start again: Unhealthy until the fault clears.
    std::ofstream(mps / "GPU-b" / "pipe" / "fake-refuse-start") << "1";
    ASSERT_EQ(::kill(DaemonPid(mps, "GPU-b"), SIGKILL), 0);
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_EQ(HealthByGpu(resp),
              (std::map<std::string, std::string>{{"GPU-a", "Healthy"}, {"GPU-b", "Unhealthy"}}));
    for (int i = 0; i < 600 && Inventory(cluster) != "GPU-a=mps,ok;GPU-b=mps,bad;"; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(Inventory(cluster), "GPU-a=mps,ok;GPU-b=mps,bad;");

    fs::remove(mps / "GPU-b" / "pipe" / "fake-refuse-start");
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_EQ(HealthByGpu(resp),
              (std::map<std::string, std::string>{{"GPU-a", "Healthy"}, {"GPU-b", "Healthy"}}));
    EXPECT_TRUE(Running(mps, "GPU-b"));
    for (int i = 0; i < 600 && Inventory(cluster) != "GPU-a=mps,ok;GPU-b=mps,ok;"; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(Inventory(cluster), "GPU-a=mps,ok;GPU-b=mps,ok;");

    ctx.TryCancel();
    plugin.Stop();
    EXPECT_FALSE(Running(mps, "GPU-a"));
    EXPECT_FALSE(Running(mps, "GPU-b"));
  }
  for (const char* uuid : {"GPU-a", "GPU-b"}) {  // whatever a failed case left
    if (const pid_t pid = DaemonPid(mps, uuid); pid > 0) ::kill(pid, SIGKILL);
  }
  fs::remove_all(dir);
}

// A node whose MPS directory cannot be made does not start: no daemons, no socket.
TEST(DevicePluginMps, UnusableMpsDirectoryStopsTheStart) {
  const fs::path dir =
      fs::temp_directory_path() / ("vgpu-dp-mps-bad-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "mps") << "a file where the MPS directory belongs";
  auto cluster = std::make_unique<testing::MemoryCluster>();
  cluster->PutNode({{"metadata", {{"name", "n1"}, {"annotations", nlohmann::json::object()}}}});
  PluginOptions o;
  o.node_name = "n1";
  o.device_plugin_path = dir.string();
  o.split.mode = "mps";
  o.mps.root = (dir / "mps").string();
  o.mps.control = VGPU_FAKE_MPS_CONTROL;
  o.register_with_kubelet = false;
  o.install_hook = false;
  DevicePlugin plugin(o, std::move(cluster),
                      std::make_unique<FakeGpuBackend>(*ParseFakeGpus("count=1", "n1")));
  Status s = plugin.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("MPS"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(plugin.SocketPath()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::deviceplugin
