#include "deviceplugin/options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace vgpu::deviceplugin {
namespace {

constexpr const char* kYaml = R"(nvidia:
  deviceSplitCount: 5
  deviceMemoryScaling: 1.5
  gpuCorePolicy: disable
)";
constexpr const char* kNodeJson = R"({"nodeconfig": [
  {"name": "n1", "devicesplitcount": 7, "filterdevices": {"uuid": ["GPU-x"], "index": [3]}},
  {"name": "n2", "devicememoryscaling": 2}]})";

TEST(ResolveOptions, FlagsWinOverNodeConfigWhichWinsOverDeviceConfig) {
  auto device = config::ParseDeviceConfigYaml(kYaml);
  auto nodes = config::ParseNodeConfigJson(kNodeJson);
  ASSERT_TRUE(device.ok() && nodes.ok());
  struct Case {
    const char* node;
    std::optional<int32_t> flag_split;
    int want_split;
    double want_scaling;
  };
  const std::vector<Case> cases = {
      {"n1", std::nullopt, 7, 1.5},  // config.json entry beats device-config.yaml
      {"n2", std::nullopt, 5, 2.0},
      {"n3", std::nullopt, 5, 1.5},  // no entry: device-config.yaml
      {"n1", 3, 3, 1.5},             // flag beats both
  };
  for (const auto& c : cases) {
    Flags f;
    f.node_name = c.node;
    f.device_split_count = c.flag_split;
    auto o = ResolveOptions(f, *device, *nodes, "9.9.9");
    ASSERT_TRUE(o.ok()) << c.node << ": " << o.status().ToString();
    EXPECT_EQ(o->split.split_count, c.want_split) << c.node;
    EXPECT_DOUBLE_EQ(o->split.memory_scaling, c.want_scaling) << c.node;
    EXPECT_DOUBLE_EQ(o->response.memory_scaling, c.want_scaling) << c.node;
    EXPECT_TRUE(o->response.disable_core_limit) << c.node;  // gpuCorePolicy: disable
    EXPECT_EQ(o->response.libvgpu_version, "9.9.9");
  }
  Flags f;
  f.node_name = "n1";
  auto o = ResolveOptions(f, *device, *nodes, "1");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->filter_uuids, std::vector<std::string>{"GPU-x"});
  EXPECT_EQ(o->filter_indexes, std::vector<int>{3});
}

TEST(ResolveOptions, FlagsMapOntoPluginOptions) {
  Flags f;
  f.node_name = "n";
  f.resource_name = "example.com/vgpu";
  f.inventory_format = "legacy";
  f.ignored_xids = "79";
  f.allow_disable_control = true;
  f.hook_path = "/opt/h";
  f.libvgpu_version = "2.0";
  auto o = ResolveOptions(f, {}, {}, "1");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->socket_name, "vgpu-example.com-vgpu.sock");
  EXPECT_EQ(o->inventory_format, codec::InventoryFormat::kLegacyText);
  EXPECT_EQ(o->ignored_xids, std::set<uint64_t>{79});
  EXPECT_TRUE(o->response.allow_disable_control);
  EXPECT_EQ(o->response.hook_path, "/opt/h");
  EXPECT_EQ(o->response.libvgpu_version, "2.0");
  EXPECT_FALSE(o->response.disable_core_limit);
  EXPECT_EQ(o->split.split_count, 10);
}

// The operating mode reaches the inventory's SplitConfig: config.json's operatingmode per node,
// --operating-mode over it; a mode vgpu cannot run refuses to start, naming its source.
TEST(ResolveOptions, OperatingModeFromNodeConfigOrFlag) {
  auto nodes = config::ParseNodeConfigJson(R"({"nodeconfig": [
    {"name": "mps-node", "operatingmode": "mps"}, {"name": "mig-node", "operatingmode": "mig"}]})");
  ASSERT_TRUE(nodes.ok());
  struct Case {
    const char* node;
    std::optional<std::string> flag;
    const char* want;  // nullptr: refused
  };
  const std::vector<Case> cases = {
      {"plain", std::nullopt, "hami-core"},
      {"mps-node", std::nullopt, "mps"},
      {"plain", "mps", "mps"},
      {"mps-node", "hami-core", "hami-core"},
      {"mig-node", std::nullopt, nullptr},
      {"plain", "time-slice", nullptr},
  };
  for (const auto& c : cases) {
    Flags f;
    f.node_name = c.node;
    f.operating_mode = c.flag;
    auto o = ResolveOptions(f, {}, *nodes, "1");
    if (c.want == nullptr) {
      ASSERT_FALSE(o.ok()) << c.node;
      EXPECT_NE(o.status().message().find("operating mode"), std::string::npos)
          << o.status().message();
      continue;
    }
    ASSERT_TRUE(o.ok()) << c.node << ": " << o.status().ToString();
    EXPECT_EQ(o->split.mode, c.want) << c.node;
  }
}

// HAMi's enableNumaTopology (device-config.yaml, as HAMi's chart writes it, or a node's
// config.json entry) and --numa-topology decide whether kubelet is told each GPU's NUMA node.
TEST(ResolveOptions, NumaTopologyFromDeviceConfigNodeConfigOrFlag) {
  auto hami_default = config::ParseDeviceConfigYaml("nvidia:\n  enableNumaTopology: false\n");
  auto nodes = config::ParseNodeConfigJson(R"({"nodeconfig": [
    {"name": "numa-node", "enablenumatopology": true}]})");
  ASSERT_TRUE(hami_default.ok() && nodes.ok());
  struct Case {
    const config::NvidiaConfig device;
    const char* node;
    std::optional<bool> flag;
    bool want;
  };
  const std::vector<Case> cases = {
      {{}, "plain", std::nullopt, true},  // vgpu's default
      {*hami_default, "plain", std::nullopt, false},
      {*hami_default, "numa-node", std::nullopt, true},
      {*hami_default, "numa-node", false, false},
      {{}, "plain", false, false},
  };
  for (const auto& c : cases) {
    Flags f;
    f.node_name = c.node;
    f.numa_topology = c.flag;
    auto o = ResolveOptions(f, c.device, *nodes, "1");
    ASSERT_TRUE(o.ok()) << c.node << ": " << o.status().ToString();
    EXPECT_EQ(o->numa_topology, c.want) << c.node;
  }
}

// docs/security.md: the plugin's only listener is kubelet's device-plugin socket, a Unix socket
// in kubelet's directory (root on the node), named after the resource.
TEST(ResolveOptions, DefaultListenerIsAUnixSocketInKubeletsDirectory) {
  Flags f;
  f.node_name = "n";
  auto o = ResolveOptions(f, {}, {}, "1");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->device_plugin_path, "/var/lib/kubelet/device-plugins/");
  EXPECT_EQ(o->socket_name, "vgpu-nvidia.com-gpu.sock");
}

TEST(ResolveOptions, BadSettingsAreClearErrors) {
  const std::vector<std::pair<Flags, std::string>> cases = [] {
    std::vector<std::pair<Flags, std::string>> v;
    Flags no_node;
    v.push_back({no_node, "NODE_NAME"});
    Flags bad_xids;
    bad_xids.node_name = "n";
    bad_xids.ignored_xids = "13,abc";
    v.push_back({bad_xids, "abc"});
    Flags zero_split;
    zero_split.node_name = "n";
    zero_split.device_split_count = 0;
    v.push_back({zero_split, "plit"});
    Flags mig;
    mig.node_name = "n";
    mig.mig_strategy = "mixed";
    v.push_back({mig, "--mig-strategy=mixed: MIG is not supported"});
    return v;
  }();
  for (const auto& [flags, fragment] : cases) {
    auto o = ResolveOptions(flags, {}, {}, "1");
    ASSERT_FALSE(o.ok()) << fragment;
    EXPECT_NE(o.status().message().find(fragment), std::string::npos) << o.status().message();
  }
}

// The names come from device-config.yaml, the one home of the resource names; off by default,
// and a name Kubernetes would refuse as a node's extended resource fails the start, not later.
TEST(ResolveOptions, ExtendedResourcesUseTheDeviceConfigNames) {
  CLI::App app;
  Flags f;
  AddFlags(app, f);
  std::vector<std::string> none;
  ASSERT_NO_THROW(app.parse(none));
  f.node_name = "n";
  auto off = ResolveOptions(f, {}, {}, "1");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->advertise_extended_resources);

  std::vector<std::string> args = {"--advertise-extended-resources"};
  ASSERT_NO_THROW(app.parse(args));
  EXPECT_TRUE(f.advertise_extended_resources);
  auto device = config::ParseDeviceConfigYaml(
      "nvidia:\n  resourceMemoryName: example.com/vmem\n  resourceCoreName: example.com/vcores\n");
  ASSERT_TRUE(device.ok());
  auto on = ResolveOptions(f, *device, {}, "1");
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(on->advertise_extended_resources);
  EXPECT_EQ(on->spec.names.memory, "example.com/vmem");
  EXPECT_EQ(on->spec.names.cores, "example.com/vcores");

  auto bad = config::ParseDeviceConfigYaml("nvidia:\n  resourceMemoryName: gpumem\n");
  ASSERT_TRUE(bad.ok());
  auto refused = ResolveOptions(f, *bad, {}, "1");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--advertise-extended-resources: cannot advertise the "
                                            "memory resource \"gpumem\""),
            std::string::npos)
      << refused.status().message();
  // The same file is fine while the option is off: nothing is advertised under it.
  std::vector<std::string> off_again = {"--advertise-extended-resources=false"};
  ASSERT_NO_THROW(app.parse(off_again));
  EXPECT_FALSE(f.advertise_extended_resources);
  EXPECT_TRUE(ResolveOptions(f, *bad, {}, "1").ok());
}

// HAMi's chart starts the plugin as `nvidia-device-plugin --config-file=/device-config.yaml
// --mig-strategy=none --disable-core-limit=false` with NODE_NAME and HOOK_PATH in the environment.
TEST(AddFlags, HamiSpellingsAreAccepted) {
  setenv("NODE_NAME", "gpu-1", 1);
  setenv("HOOK_PATH", "/opt/hook", 1);
  CLI::App app;
  Flags f;
  AddFlags(app, f);
  // CLI11 takes the arguments in reverse order.
  std::vector<std::string> args = {"4", "-v", "--disable-core-limit=false", "--mig-strategy=none",
                                   "--config-file=/device-config.yaml"};
  ASSERT_NO_THROW(app.parse(args));
  unsetenv("NODE_NAME");
  unsetenv("HOOK_PATH");
  EXPECT_EQ(f.device_config, "/device-config.yaml");
  EXPECT_EQ(f.mig_strategy, "none");
  EXPECT_EQ(f.disable_core_limit, std::optional<bool>(false));
  EXPECT_EQ(f.common.verbosity, 4);
  EXPECT_EQ(f.numa_topology, std::nullopt);  // left to the config files
  EXPECT_EQ(f.node_name, "gpu-1");
  EXPECT_EQ(f.hook_path, "/opt/hook");
  EXPECT_TRUE(ResolveOptions(f, {}, {}, "1").ok());
}

TEST(AddFlags, NumaTopologyFlag) {
  for (const auto& [arg, want] :
       {std::pair{"--numa-topology=false", false}, std::pair{"--numa-topology=true", true}}) {
    CLI::App app;
    Flags f;
    AddFlags(app, f);
    std::vector<std::string> args = {arg, "--node-name=n"};
    ASSERT_NO_THROW(app.parse(args)) << arg;
    EXPECT_EQ(f.numa_topology, std::optional<bool>(want)) << arg;
  }
}

}  // namespace
}  // namespace vgpu::deviceplugin
