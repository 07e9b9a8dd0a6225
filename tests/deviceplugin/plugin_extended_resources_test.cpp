// The plugin in-process over an in-memory API (memory_cluster.h), --advertise-extended-resources:
// the node's status.capacity follows the healthy GPUs, other status fields stay, turning the
// option off withdraws exactly what an earlier run advertised, and an off plugin on a node it
// never advertised on writes no status at all.

#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "core/base/log.h"
#include "deviceplugin/fake_gpus.h"
#include "deviceplugin/plugin.h"
#include "memory_cluster.h"

namespace vgpu::deviceplugin {
namespace {
using namespace std::chrono_literals;
using nlohmann::json;

// One MemoryCluster outliving several plugins (each owns its ClusterApi), as the API server
// outlives plugin restarts.
class SharedCluster : public ClusterApi {
 public:
  explicit SharedCluster(testing::MemoryCluster& c) : c_(c) {}
  Result<json> GetNode(const std::string& n) override { return c_.GetNode(n); }
  Result<json> GetPod(const std::string& ns, const std::string& n) override {
    return c_.GetPod(ns, n);
  }
  Result<std::vector<json>> ListPodsOnNode(const std::string& n) override {
    return c_.ListPodsOnNode(n);
  }
  Status PatchPodAnnotations(const std::string& ns, const std::string& n,
                             const AnnotationPatch& p) override {
    return c_.PatchPodAnnotations(ns, n, p);
  }
  Status PatchNodeAnnotations(const std::string& n, const AnnotationPatch& p) override {
    return c_.PatchNodeAnnotations(n, p);
  }
  Status PatchNodeStatus(const std::string& n, const json& p) override {
    return c_.PatchNodeStatus(n, p);
  }
  Status RemoveNodeAnnotationIf(const std::string& n, const std::string& k,
                                const std::string& e) override {
    return c_.RemoveNodeAnnotationIf(n, k, e);
  }

 private:
  testing::MemoryCluster& c_;
};

// A node as kubelet reports it, with an extended resource an admin advertised by hand.
json KubeletNode() {
  return {{"metadata", {{"name", "n1"}, {"annotations", json::object()}}},
          {"status",
           {{"capacity", {{"cpu", "8"}, {"nvidia.com/gpu", "20"}, {"example.com/dongle", "4"}}},
            {"allocatable", {{"cpu", "7"}, {"nvidia.com/gpu", "20"}, {"example.com/dongle", "4"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

PluginOptions Options(bool advertise) {
  PluginOptions o;
  o.node_name = "n1";
  o.serve_grpc = false;
  o.install_hook = false;
  o.split.split_count = 10;
  o.split.memory_scaling = 1.5;  // registered devmem 24576 per 16384-MiB GPU
  o.split.core_scaling = 2;      // registered devcore 200 per GPU
  o.health_recovery = 0s;
  o.health_probe_interval = 20ms;
  o.kubelet_poll_interval = 10ms;
  o.advertise_extended_resources = advertise;
  return o;
}

std::string At(const json& node, const std::string& field, const std::string& name) {
  const json& m = node["status"][field];
  return m.contains(name) ? m[name].get<std::string>() : "<absent>";
}
std::string Marker(const json& node) {
  return node["metadata"]["annotations"].value("vgpu.io/extended-resources", "<absent>");
}

// Kubelet's part, which no kubelet plays here: an extended resource new in capacity appears in
// allocatable with the same value.
void KubeletCopiesCapacity(testing::MemoryCluster& cluster) {
  json node = cluster.Node("n1");
  for (const auto& [k, v] : node["status"]["capacity"].items()) {
    if (!node["status"]["allocatable"].contains(k)) node["status"]["allocatable"][k] = v;
  }
  cluster.PutNode(node);
}

// The fields of the status no one but kubelet may change.
void ExpectKubeletFieldsKept(const json& node) {
  EXPECT_EQ(At(node, "capacity", "cpu"), "8");
  EXPECT_EQ(At(node, "allocatable", "cpu"), "7");
  EXPECT_EQ(At(node, "capacity", "example.com/dongle"), "4");
  EXPECT_EQ(At(node, "allocatable", "example.com/dongle"), "4");
  EXPECT_EQ(At(node, "capacity", "nvidia.com/gpu"), "20");
  EXPECT_EQ(node["status"]["conditions"], KubeletNode()["status"]["conditions"]);
}

template <typename Pred>
bool WaitFor(Pred pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

std::unique_ptr<FakeGpuBackend> TwoGpus() {
  return std::make_unique<FakeGpuBackend>(
      *ParseFakeGpus("count=2,memory=16384,uuids=GPU-a;GPU-b", "n1"));
}

TEST(ExtendedResources, OffByDefaultWritesNoStatus) {
  testing::MemoryCluster cluster;
  json node = KubeletNode();
  // Advertised by hand (HAMi #261's workaround), not by us: an off plugin must leave it.
  node["status"]["capacity"]["nvidia.com/gpumem"] = "1000";
  cluster.PutNode(node);
  EXPECT_FALSE(PluginOptions{}.advertise_extended_resources);
  DevicePlugin plugin(Options(false), std::make_unique<SharedCluster>(cluster), TwoGpus());
  ASSERT_TRUE(plugin.Start().ok());
  plugin.Stop();
  json after = cluster.Node("n1");
  EXPECT_TRUE(after["metadata"]["annotations"].contains("hami.io/node-nvidia-register"));
  EXPECT_EQ(cluster.status_writes(), 0);
  EXPECT_EQ(Marker(after), "<absent>");
  EXPECT_EQ(after["status"], node["status"]);
}

TEST(ExtendedResources, FollowTheHealthyGpusAndGoWhenTurnedOff) {
  testing::MemoryCluster cluster;
  cluster.PutNode(KubeletNode());
  auto backend_owned = TwoGpus();
  FakeGpuBackend& backend = *backend_owned;
  auto plugin = std::make_unique<DevicePlugin>(
      Options(true), std::make_unique<SharedCluster>(cluster), std::move(backend_owned));
  ASSERT_TRUE(plugin->Start().ok());
  // Written by Start itself: the registered figures (x1.5 memory, 100 x 2 cores per GPU).
  json node = cluster.Node("n1");
  EXPECT_EQ(At(node, "capacity", "nvidia.com/gpumem"), "49152");
  EXPECT_EQ(At(node, "capacity", "nvidia.com/gpucores"), "400");
  EXPECT_EQ(At(node, "allocatable", "nvidia.com/gpumem"), "<absent>");  // kubelet's to derive
  EXPECT_EQ(Marker(node), "nvidia.com/gpucores,nvidia.com/gpumem");
  ExpectKubeletFieldsKept(node);

  // GPU-b fails: its share leaves the capacity; it recovers: back.
  backend.SetResponding("GPU-b", false);
  backend.InjectXid({"GPU-b", 79});
  EXPECT_TRUE(
      WaitFor([&] { return At(cluster.Node("n1"), "capacity", "nvidia.com/gpumem") == "24576"; }));
  EXPECT_EQ(At(cluster.Node("n1"), "capacity", "nvidia.com/gpucores"), "200");
  backend.SetResponding("GPU-b", true);
  EXPECT_TRUE(
      WaitFor([&] { return At(cluster.Node("n1"), "capacity", "nvidia.com/gpumem") == "49152"; }));
  EXPECT_EQ(At(cluster.Node("n1"), "capacity", "nvidia.com/gpucores"), "400");
  plugin->Stop();
  // Stopping withdraws nothing: a restart must not flap what autoscalers and quotas see.
  EXPECT_EQ(At(cluster.Node("n1"), "capacity", "nvidia.com/gpumem"), "49152");
  ExpectKubeletFieldsKept(cluster.Node("n1"));

  // The option turned off: the next start removes both entries from capacity and allocatable,
  // and its mark, and nothing else.
  KubeletCopiesCapacity(cluster);
  plugin = std::make_unique<DevicePlugin>(Options(false), std::make_unique<SharedCluster>(cluster),
                                          TwoGpus());
  ASSERT_TRUE(plugin->Start().ok());
  plugin->Stop();
  node = cluster.Node("n1");
  for (const char* field : {"capacity", "allocatable"}) {
    EXPECT_EQ(At(node, field, "nvidia.com/gpumem"), "<absent>") << field;
    EXPECT_EQ(At(node, field, "nvidia.com/gpucores"), "<absent>") << field;
  }
  EXPECT_EQ(Marker(node), "<absent>");
  ExpectKubeletFieldsKept(node);

  // Off again, nothing of ours left: no status write.
  const int writes = cluster.status_writes();
  plugin = std::make_unique<DevicePlugin>(Options(false), std::make_unique<SharedCluster>(cluster),
                                          TwoGpus());
  ASSERT_TRUE(plugin->Start().ok());
  plugin->Stop();
  EXPECT_EQ(cluster.status_writes(), writes);
}

TEST(ExtendedResources, RenamedResourcesReplaceTheOldNames) {
  testing::MemoryCluster cluster;
  cluster.PutNode(KubeletNode());
  auto plugin = std::make_unique<DevicePlugin>(Options(true),
                                               std::make_unique<SharedCluster>(cluster), TwoGpus());
  ASSERT_TRUE(plugin->Start().ok());
  plugin->Stop();
  KubeletCopiesCapacity(cluster);
  PluginOptions renamed = Options(true);
  renamed.spec.names.memory = "example.com/vmem";
  renamed.spec.names.cores = "example.com/vcores";
  plugin =
      std::make_unique<DevicePlugin>(renamed, std::make_unique<SharedCluster>(cluster), TwoGpus());
  ASSERT_TRUE(plugin->Start().ok());
  plugin->Stop();
  json node = cluster.Node("n1");
  EXPECT_EQ(At(node, "capacity", "example.com/vmem"), "49152");
  EXPECT_EQ(At(node, "capacity", "example.com/vcores"), "400");
  for (const char* field : {"capacity", "allocatable"}) {
    EXPECT_EQ(At(node, field, "nvidia.com/gpumem"), "<absent>") << field;
    EXPECT_EQ(At(node, field, "nvidia.com/gpucores"), "<absent>") << field;
  }
  EXPECT_EQ(Marker(node), "example.com/vcores,example.com/vmem");
  ExpectKubeletFieldsKept(node);
}

std::mutex g_lines_mu;
std::string g_lines;
void Capture(std::string_view line) {
  std::lock_guard l(g_lines_mu);
  g_lines += line;
}

TEST(ExtendedResources, WithoutRbacTheWarningSaysWhatToGrant) {
  testing::MemoryCluster cluster;
  cluster.PutNode(KubeletNode());
  cluster.AllowStatus(false);
  log::SetSink(&Capture);
  DevicePlugin plugin(Options(true), std::make_unique<SharedCluster>(cluster), TwoGpus());
  Status started = plugin.Start();  // the inventory is what the scheduler needs: not fatal
  plugin.Stop();
  log::SetSink(nullptr);
  ASSERT_TRUE(started.ok()) << started.ToString();
  std::lock_guard l(g_lines_mu);
  EXPECT_NE(g_lines.find("advertising the extended resources of node n1"), std::string::npos)
      << g_lines;
  EXPECT_NE(g_lines.find("needs patch on nodes/status"), std::string::npos) << g_lines;
  json node = cluster.Node("n1");
  EXPECT_TRUE(node["metadata"]["annotations"].contains("hami.io/node-nvidia-register"));
  // Marked all the same, so that a later run that may write withdraws what this one meant to.
  EXPECT_EQ(Marker(node), "nvidia.com/gpucores,nvidia.com/gpumem");
  EXPECT_EQ(At(node, "capacity", "nvidia.com/gpumem"), "<absent>");
}

TEST(ExtendedResources, OffWithoutRbacLeavesThemAndSaysSoOnce) {
  // The chart grants nodes/status only with the option on: turned off through the chart, the
  // plugin finds its mark but may not withdraw. Its GPUs must go on being reported, the warning
  // must say what is left and how to remove it, and the refused patch must not be retried
  // every report (nor fail the report, which would retry every 5 s).
  testing::MemoryCluster cluster;
  json node = KubeletNode();
  node["metadata"]["annotations"]["vgpu.io/extended-resources"] =
      "nvidia.com/gpucores,nvidia.com/gpumem";
  node["status"]["capacity"]["nvidia.com/gpumem"] = "32768";
  node["status"]["capacity"]["nvidia.com/gpucores"] = "200";
  cluster.PutNode(node);
  cluster.AllowStatus(false);
  {
    std::lock_guard l(g_lines_mu);
    g_lines.clear();
  }
  log::SetSink(&Capture);
  PluginOptions o = Options(false);
  o.report_interval = 20ms;
  DevicePlugin plugin(o, std::make_unique<SharedCluster>(cluster), TwoGpus());
  Status started = plugin.Start();
  // Several periodic reports.
  const int writes = cluster.writes();
  EXPECT_TRUE(WaitFor([&] { return cluster.writes() >= writes + 5; }));
  plugin.Stop();
  log::SetSink(nullptr);
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_EQ(cluster.status_attempts(), 1);
  json after = cluster.Node("n1");
  EXPECT_TRUE(after["metadata"]["annotations"].contains("hami.io/node-nvidia-register"));
  EXPECT_EQ(after["status"], node["status"]);
  // Still marked: a start that may write withdraws them.
  EXPECT_EQ(Marker(after), "nvidia.com/gpucores,nvidia.com/gpumem");
  std::lock_guard l(g_lines_mu);
  const std::string warning = "extended resources left in the node's capacity";
  const size_t at = g_lines.find(warning);
  ASSERT_NE(at, std::string::npos) << g_lines;
  EXPECT_EQ(g_lines.find(warning, at + 1), std::string::npos)
      << "warned more than once: " << g_lines;
  EXPECT_NE(g_lines.find("remove them by hand"), std::string::npos) << g_lines;
  EXPECT_EQ(g_lines.find("node report failed"), std::string::npos) << g_lines;

  // Allowed again (RBAC granted), the next start withdraws them.
  cluster.AllowStatus(true);
  DevicePlugin again(Options(false), std::make_unique<SharedCluster>(cluster), TwoGpus());
  ASSERT_TRUE(again.Start().ok());
  again.Stop();
  after = cluster.Node("n1");
  EXPECT_EQ(At(after, "capacity", "nvidia.com/gpumem"), "<absent>");
  EXPECT_EQ(Marker(after), "<absent>");
}

TEST(ExtendedResources, AMarkRemovedByHandComesBackWhileAdvertising) {
  // The mark is how a later start without the flag knows what to withdraw: removed by hand while
  // the plugin still writes the entries, it must come back with the next report.
  testing::MemoryCluster cluster;
  cluster.PutNode(KubeletNode());
  PluginOptions o = Options(true);
  o.report_interval = 20ms;
  DevicePlugin plugin(o, std::make_unique<SharedCluster>(cluster), TwoGpus());
  ASSERT_TRUE(plugin.Start().ok());
  ASSERT_EQ(Marker(cluster.Node("n1")), "nvidia.com/gpucores,nvidia.com/gpumem");
  json node = cluster.Node("n1");
  node["metadata"]["annotations"].erase("vgpu.io/extended-resources");
  cluster.PutNode(node);
  EXPECT_TRUE(WaitFor(
      [&] { return Marker(cluster.Node("n1")) == "nvidia.com/gpucores,nvidia.com/gpumem"; }));
  plugin.Stop();
}

}  // namespace
}  // namespace vgpu::deviceplugin
