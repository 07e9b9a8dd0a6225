// The plugin library in-process (as the simulated cluster runs it): XID events turn a GPU's
// replicas Unhealthy in ListAndWatch and in the inventory annotation, and it recovers.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "api.grpc.pb.h"
#include "core/codec/node_inventory.h"
#include "deviceplugin/fake_gpus.h"
#include "deviceplugin/plugin.h"
#include "memory_cluster.h"

namespace vgpu::deviceplugin {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::map<std::string, std::string> HealthByGpu(const v1beta1::ListAndWatchResponse& r) {
  std::map<std::string, std::string> out;
  for (const auto& d : r.devices()) out[GpuOfReplica(d.id())] = d.health();
  return out;
}

std::string InventoryHealth(testing::MemoryCluster& cluster) {
  auto node = cluster.Node("n1");
  auto text = node["metadata"]["annotations"].value("hami.io/node-nvidia-register", "");
  auto inv = codec::DecodeInventory(text);
  if (!inv.ok()) return "<bad>";
  std::string out;
  for (const auto& d : *inv) out += d.id + "=" + (d.health ? "ok" : "bad") + ";";
  return out;
}

TEST(DevicePluginInProcess, XidMakesGpuUnhealthyThenItRecovers) {
  const fs::path dir = fs::temp_directory_path() / ("vgpu-dp-health-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto cluster_owned = std::make_unique<testing::MemoryCluster>();
  testing::MemoryCluster& cluster = *cluster_owned;
  cluster.PutNode({{"metadata", {{"name", "n1"}, {"annotations", nlohmann::json::object()}}}});
  auto backend_owned = std::make_unique<FakeGpuBackend>(*ParseFakeGpus("uuids=GPU-a;GPU-b", "n1"));
  FakeGpuBackend& backend = *backend_owned;

  PluginOptions o;
  o.node_name = "n1";
  o.device_plugin_path = dir.string();
  o.split.split_count = 2;
  o.register_with_kubelet = false;
  o.install_hook = false;
  o.inventory_format = codec::InventoryFormat::kLegacyText;
  o.health_recovery = 0s;
  o.health_probe_interval = 50ms;
  o.kubelet_poll_interval = 20ms;
  DevicePlugin plugin(o, std::move(cluster_owned), std::move(backend_owned));
  ASSERT_TRUE(plugin.Start().ok());
  EXPECT_EQ(InventoryHealth(cluster), "GPU-a=ok;GPU-b=ok;");
  EXPECT_EQ(cluster.Node("n1")["metadata"]["annotations"]["hami.io/node-nvidia-register"]
                .get<std::string>()
                .front(),
            'G');  // legacy text form

  auto channel =
      grpc::CreateChannel("unix://" + plugin.SocketPath(), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  grpc::ClientContext ctx;
  auto stream = stub->ListAndWatch(&ctx, v1beta1::Empty());
  v1beta1::ListAndWatchResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(HealthByGpu(resp),
            (std::map<std::string, std::string>{{"GPU-a", "Healthy"}, {"GPU-b", "Healthy"}}));

  // An application XID changes nothing; a critical one, while the GPU stops answering, marks it.
  backend.InjectXid({"GPU-b", 13});
  backend.SetResponding("GPU-b", false);
  backend.InjectXid({"GPU-b", 79});
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(HealthByGpu(resp),
            (std::map<std::string, std::string>{{"GPU-a", "Healthy"}, {"GPU-b", "Unhealthy"}}));
  for (int i = 0; i < 600 && InventoryHealth(cluster) != "GPU-a=ok;GPU-b=bad;"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(InventoryHealth(cluster), "GPU-a=ok;GPU-b=bad;");

  // Healthy again (answers NVML, quiet period 0): ListAndWatch resends, inventory follows.
  backend.SetResponding("GPU-b", true);
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_EQ(HealthByGpu(resp),
            (std::map<std::string, std::string>{{"GPU-a", "Healthy"}, {"GPU-b", "Healthy"}}));
  for (int i = 0; i < 600 && InventoryHealth(cluster) != "GPU-a=ok;GPU-b=ok;"; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(InventoryHealth(cluster), "GPU-a=ok;GPU-b=ok;");

  ctx.TryCancel();
  plugin.Stop();
  EXPECT_FALSE(fs::exists(plugin.SocketPath()));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::deviceplugin

namespace vgpu::deviceplugin {
namespace {

// How the simulated cluster runs a node: no socket, Allocate called directly.
TEST(DevicePluginInProcess, WithoutGrpcServesAllocateDirectly) {
  auto cluster_owned = std::make_unique<testing::MemoryCluster>();
  testing::MemoryCluster& cluster = *cluster_owned;
  cluster.PutNode({{"metadata", {{"name", "sim-7"}, {"annotations", nlohmann::json::object()}}}});
  cluster.PutPod({{"metadata",
                   {{"name", "p"},
                    {"namespace", "default"},
                    {"uid", "u"},
                    {"annotations",
                     {{"hami.io/bind-phase", "allocating"},
                      {"hami.io/vgpu-node", "sim-7"},
                      {"hami.io/vgpu-devices-to-allocate", "GPU-fake-sim-7-1,NVIDIA,100,10:;"}}}}},
                  {"spec",
                   {{"nodeName", "sim-7"},
                    {"containers",
                     {{{"name", "c"},
                       {"resources",
                        {{"limits",
                          {{"nvidia.com/gpu", "1"},
                           {"nvidia.com/gpumem", "100"},
                           {"nvidia.com/gpucores", "10"}}}}}}}}}},
                  {"status", {{"phase", "Pending"}}}});
  PluginOptions o;
  o.node_name = "sim-7";
  o.device_plugin_path = "/nonexistent-dir";  // never touched
  o.serve_grpc = false;
  o.install_hook = false;
  o.response.hook_path =
      (std::filesystem::temp_directory_path() / ("vgpu-dp-sim-" + std::to_string(::getpid())))
          .string();
  DevicePlugin plugin(o, std::move(cluster_owned),
                      std::make_unique<FakeGpuBackend>(*ParseFakeGpus("count=2", "sim-7")));
  ASSERT_TRUE(plugin.Start().ok());
  EXPECT_EQ(plugin.Replicas().size(), 20u);
  EXPECT_FALSE(std::filesystem::exists(plugin.SocketPath()));
  auto r = plugin.allocator().Allocate({{"GPU-fake-sim-7-1-0"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-fake-sim-7-1");
  EXPECT_EQ(cluster.Pod("default", "p")["metadata"]["annotations"]["hami.io/bind-phase"],
            "success");
  plugin.Stop();
  std::filesystem::remove_all(o.response.hook_path);
}

}  // namespace
}  // namespace vgpu::deviceplugin

namespace vgpu::deviceplugin {
namespace {

// A topology from --fake-gpus is published as hami.io/node-nvidia-score over the GPUs the node
// registers (config.json's filter applied), in HAMi's form; --topology-score=false publishes none.
TEST(DevicePluginInProcess, PublishesPairScoresOfTheRegisteredGpus) {
  const fs::path dir = fs::temp_directory_path() / ("vgpu-dp-score-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (bool enabled : {true, false}) {
    auto cluster_owned = std::make_unique<testing::MemoryCluster>();
    testing::MemoryCluster& cluster = *cluster_owned;
    cluster.PutNode({{"metadata", {{"name", "n1"}, {"annotations", nlohmann::json::object()}}}});
    auto fake = ParseFakeGpuSpec("uuids=GPU-a;GPU-b;GPU-c,topology=0-1=node+nv4,*=system", "n1");
    ASSERT_TRUE(fake.ok()) << fake.status().ToString();
    PluginOptions o;
    o.node_name = "n1";
    o.device_plugin_path = dir.string();
    o.register_with_kubelet = false;
    o.serve_grpc = false;
    o.install_hook = false;
    o.filter_uuids = {"GPU-c"};  // not registered: not scored
    o.topology_score = enabled;
    DevicePlugin plugin(o, std::move(cluster_owned),
                        std::make_unique<FakeGpuBackend>(std::move(*fake)));
    ASSERT_TRUE(plugin.Start().ok());
    const auto annos = cluster.Node("n1")["metadata"]["annotations"];
    if (enabled) {
      EXPECT_EQ(
          annos.value("hami.io/node-nvidia-score", ""),
          R"([{"uuid":"GPU-a","score":{"GPU-b":420}},{"uuid":"GPU-b","score":{"GPU-a":420}}])");
    } else {
      EXPECT_FALSE(annos.contains("hami.io/node-nvidia-score")) << annos.dump();
    }
    plugin.Stop();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::deviceplugin

namespace vgpu::deviceplugin {
namespace {

// ListAndWatch tells kubelet each device's NUMA node (its GPU's) unless numa_topology is off
// (HAMi's enableNumaTopology: false): then no device carries a topology, as under HAMi, and
// kubelet's Topology Manager has no NUMA hint from this plugin.
TEST(DevicePluginInProcess, ListAndWatchCarriesTheNumaNodeUnlessTurnedOff) {
  const fs::path dir = fs::temp_directory_path() / ("vgpu-dp-numa-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (bool numa : {true, false}) {
    auto cluster_owned = std::make_unique<testing::MemoryCluster>();
    cluster_owned->PutNode(
        {{"metadata", {{"name", "n1"}, {"annotations", nlohmann::json::object()}}}});
    auto fake = ParseFakeGpus("uuids=GPU-a;GPU-b,numa=1", "n1");
    ASSERT_TRUE(fake.ok()) << fake.status().ToString();
    PluginOptions o;
    o.node_name = "n1";
    o.device_plugin_path = dir.string();
    o.split.split_count = 2;
    o.register_with_kubelet = false;
    o.install_hook = false;
    o.numa_topology = numa;
    DevicePlugin plugin(o, std::move(cluster_owned), std::make_unique<FakeGpuBackend>(*fake));
    ASSERT_TRUE(plugin.Start().ok());

    auto channel =
        grpc::CreateChannel("unix://" + plugin.SocketPath(), grpc::InsecureChannelCredentials());
    auto stub = v1beta1::DevicePlugin::NewStub(channel);
    grpc::ClientContext ctx;
    auto stream = stub->ListAndWatch(&ctx, v1beta1::Empty());
    v1beta1::ListAndWatchResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    ASSERT_EQ(resp.devices_size(), 4);
    for (const auto& d : resp.devices()) {
      if (numa) {
        ASSERT_TRUE(d.has_topology()) << d.id();
        ASSERT_EQ(d.topology().nodes_size(), 1) << d.id();
        EXPECT_EQ(d.topology().nodes(0).id(), 1) << d.id();
      } else {
        EXPECT_FALSE(d.has_topology()) << d.id() << ": " << d.topology().DebugString();
      }
    }
    ctx.TryCancel();
    plugin.Stop();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::deviceplugin
