#include "core/config/device_config.h"

#include <gtest/gtest.h>

namespace vgpu::config {
namespace {

TEST(DeviceConfigTest, DefaultsMatchHami) {
  for (const char* text : {"", "other: {x: 1}\n", "nvidia:\n"}) {
    auto c = ParseDeviceConfigYaml(text);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(*c, NvidiaConfig{}) << text;
  }
  NvidiaConfig d;
  EXPECT_EQ(d.resource_count_name, "nvidia.com/gpu");
  EXPECT_EQ(d.resource_memory_name, "nvidia.com/gpumem");
  EXPECT_EQ(d.resource_core_name, "nvidia.com/gpucores");
  EXPECT_EQ(d.resource_memory_percentage_name, "nvidia.com/gpumem-percentage");
  EXPECT_EQ(d.resource_priority_name, "nvidia.com/priority");
  EXPECT_EQ(d.default_memory, 0);
  EXPECT_EQ(d.default_cores, 0);
  EXPECT_EQ(d.default_gpu_num, 1);
  EXPECT_EQ(d.device_split_count, 10);
  EXPECT_EQ(d.device_memory_scaling, 1.0);
  EXPECT_EQ(d.device_core_scaling, 1.0);
  EXPECT_FALSE(d.disable_core_limit);
  EXPECT_EQ(d.gpu_core_policy, "default");
  EXPECT_FALSE(d.enable_numa_topology.has_value());  // unset: NodeSettings' default applies
}

TEST(DeviceConfigTest, ReadsAllKeysAndIgnoresUnknown) {
  auto c = ParseDeviceConfigYaml(R"(
nvidia:
  resourceCountName: example.com/vgpu
  resourceMemoryName: example.com/vmem
  resourceCoreName: example.com/vcores
  resourceMemoryPercentageName: example.com/vmem-pct
  resourcePriorityName: example.com/prio
  defaultMemory: 5000
  defaultCores: 20
  defaultGPUNum: 2
  deviceSplitCount: 4
  deviceMemoryScaling: 1.5
  deviceCoreScaling: 2
  disableCoreLimit: true
  gpuCorePolicy: force
  enableNumaTopology: false
  knownMigGeometries: [{models: ["A100"]}]
cambricon:
  resourceCountName: cambricon.com/vmlu
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->resource_count_name, "example.com/vgpu");
  EXPECT_EQ(c->resource_names().memory, "example.com/vmem");
  EXPECT_EQ(c->resource_names().cores, "example.com/vcores");
  EXPECT_EQ(c->resource_names().memory_percentage, "example.com/vmem-pct");
  EXPECT_EQ(c->resource_names().priority, "example.com/prio");
  EXPECT_EQ(c->default_memory, 5000);
  EXPECT_EQ(c->default_cores, 20);
  EXPECT_EQ(c->default_gpu_num, 2);
  EXPECT_EQ(c->device_split_count, 4);
  EXPECT_DOUBLE_EQ(c->device_memory_scaling, 1.5);
  EXPECT_DOUBLE_EQ(c->device_core_scaling, 2.0);
  EXPECT_TRUE(c->disable_core_limit);
  EXPECT_EQ(c->gpu_core_policy, "force");
  EXPECT_EQ(c->enable_numa_topology, std::optional<bool>(false));
}

TEST(DeviceConfigTest, BadValuesNameTheKey) {
  struct Case {
    const char* yaml;
    const char* want;
  };
  const Case cases[] = {
      {"nvidia:\n  deviceSplitCount: ten\n",
       "nvidia.deviceSplitCount: want an integer, got \"ten\""},
      {"nvidia:\n  deviceMemoryScaling: [1]\n",
       "nvidia.deviceMemoryScaling: want a number, got a list"},
      {"nvidia:\n  disableCoreLimit: maybe\n", "nvidia.disableCoreLimit: want true or false"},
      {"nvidia:\n  defaultMemory: 1.5\n", "nvidia.defaultMemory: want an integer"},
      {"nvidia:\n  resourceCountName: {a: b}\n", "nvidia.resourceCountName: want a string"},
      {"nvidia:\n  defaultCores: 101\n", "defaultCores must be within 0-100"},
      {"nvidia:\n  gpuCorePolicy: sometimes\n", "gpuCorePolicy \"sometimes\" is not one of"},
      {"nvidia:\n  enableNumaTopology: sometimes\n",
       "nvidia.enableNumaTopology: want true or false, got \"sometimes\""},
      {"nvidia: [1, 2]\n", "nvidia: must be a mapping"},
      {"nvidia: {a: [}\n", "not valid YAML"},
      {"- 1\n", "top level must be a mapping"},
  };
  for (const auto& c : cases) {
    auto r = ParseDeviceConfigYaml(c.yaml);
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.yaml << " -> " << r.status().message();
  }
}

TEST(NodeConfigTest, ParsesEntries) {
  auto nodes = ParseNodeConfigJson(R"({"nodeconfig":[
    {"name":"node-a","devicesplitcount":4,"devicememoryscaling":1.5,"devicecorescaling":1,
     "operatingmode":"hami-core","filterdevices":{"uuid":["GPU-x"],"index":[3,5]},
     "enablenumatopology":true},
    {"name":"node-b","enablenumatopology":null}]})");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0],
            (NodeOverride{"node-a", 4, 1.5, 1.0, {"GPU-x"}, {3, 5}, "hami-core", true}));
  EXPECT_EQ((*nodes)[1], (NodeOverride{"node-b", {}, {}, {}, {}, {}, {}, {}}));
  EXPECT_TRUE(ParseNodeConfigJson("{}")->empty());
}

TEST(NodeConfigTest, BadValuesNameTheKey) {
  struct Case {
    const char* json;
    const char* want;
  };
  const Case cases[] = {
      {"[", "not valid JSON"},
      {"[]", "top level must be an object"},
      {R"({"nodeconfig":{}})", "nodeconfig: want a list"},
      {R"({"nodeconfig":[{"devicesplitcount":1}]})", "nodeconfig[0].name"},
      {R"({"nodeconfig":[{"name":"n","devicesplitcount":"4"}]})",
       "nodeconfig \"n\".devicesplitcount: want an integer, got \"4\""},
      {R"({"nodeconfig":[{"name":"n","devicememoryscaling":true}]})",
       "devicememoryscaling: want a number"},
      {R"({"nodeconfig":[{"name":"n","filterdevices":{"index":["0"]}}]})",
       "filterdevices.index: want integers"},
      {R"({"nodeconfig":[{"name":"n","filterdevices":{"uuid":"GPU-a"}}]})",
       "filterdevices.uuid: want a list"},
      {R"({"nodeconfig":[{"name":"n","operatingmode":1}]})",
       "nodeconfig \"n\".operatingmode: want a string, got 1"},
      {R"({"nodeconfig":[{"name":"n","enablenumatopology":"false"}]})",
       "nodeconfig \"n\".enablenumatopology: want true or false, got \"false\""},
  };
  for (const auto& c : cases) {
    auto r = ParseNodeConfigJson(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.json << " -> " << r.status().message();
  }
}

TEST(MergeTest, PrecedenceTable) {
  NvidiaConfig device;
  device.device_split_count = 8;
  device.device_memory_scaling = 1.2;
  device.gpu_core_policy = "force";
  std::vector<NodeOverride> nodes{{"node-a", 4, {}, 2.0, {"GPU-x"}, {1}, {}, {}},
                                  {"node-b", {}, 3.0, {}, {}, {}, {}, {}}};
  struct Case {
    const char* node;
    FlagOverrides flags;
    int32_t split;
    double mem;
    double core;
    std::string policy;
  };
  FlagOverrides split_flag;
  split_flag.device_split_count = 16;
  FlagOverrides policy_flag;
  policy_flag.gpu_core_policy = "disable";
  const Case cases[] = {
      {"other", {}, 8, 1.2, 1.0, "force"},
      {"node-a", {}, 4, 1.2, 2.0, "force"},
      {"node-b", {}, 8, 3.0, 1.0, "force"},
      {"node-a", split_flag, 16, 1.2, 2.0, "force"},
      {"node-b", policy_flag, 8, 3.0, 1.0, "disable"},
  };
  for (const auto& c : cases) {
    auto s = MergeNodeSettings(device, nodes, c.node, c.flags);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->device_split_count, c.split) << c.node;
    EXPECT_DOUBLE_EQ(s->device_memory_scaling, c.mem) << c.node;
    EXPECT_DOUBLE_EQ(s->device_core_scaling, c.core) << c.node;
    EXPECT_EQ(s->gpu_core_policy, c.policy) << c.node;
  }
  auto a = MergeNodeSettings(device, nodes, "node-a", {});
  EXPECT_EQ(a->filter_uuids, std::vector<std::string>{"GPU-x"});
  EXPECT_EQ(a->filter_indices, std::vector<int32_t>{1});
}

TEST(MergeTest, OutOfRangeNamesSource) {
  std::vector<NodeOverride> nodes{{"node-a", 0, {}, {}, {}, {}, {}, {}}};
  auto r = MergeNodeSettings(NvidiaConfig{}, nodes, "node-a", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("config.json node \"node-a\""), std::string::npos);
  EXPECT_NE(r.status().message().find("split count 0"), std::string::npos);
  FlagOverrides bad_scaling;
  bad_scaling.device_memory_scaling = -1;
  r = MergeNodeSettings(NvidiaConfig{}, {}, "x", bad_scaling);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("+ flags"), std::string::npos);
  FlagOverrides bad_policy;
  bad_policy.gpu_core_policy = "x";
  EXPECT_FALSE(MergeNodeSettings(NvidiaConfig{}, {}, "x", bad_policy).ok());
}

// The node's operating mode: hami-core unless config.json's entry or the flag says otherwise; a
// word other than hami-core or mps refuses to start the node (its pods were promised a mode).
TEST(MergeTest, OperatingModeTable) {
  std::vector<NodeOverride> nodes{{"mps-node", {}, {}, {}, {}, {}, "mps", {}},
                                  {"core-node", {}, {}, {}, {}, {}, "hami-core", {}},
                                  {"mig-node", {}, {}, {}, {}, {}, "mig", {}},
                                  {"typo-node", {}, {}, {}, {}, {}, "MPS", {}}};
  FlagOverrides mps_flag;
  mps_flag.operating_mode = "mps";
  FlagOverrides core_flag;
  core_flag.operating_mode = "hami-core";
  struct Case {
    const char* node;
    FlagOverrides flags;
    const char* want_mode;   // nullptr: an error
    const char* want_error;  // substring of the error
  };
  const Case cases[] = {
      {"other", {}, "hami-core", nullptr},
      {"mps-node", {}, "mps", nullptr},
      {"core-node", {}, "hami-core", nullptr},
      {"other", mps_flag, "mps", nullptr},
      {"mps-node", core_flag, "hami-core", nullptr},
      {"mig-node", {}, nullptr, "vgpu does not create MIG instances"},
      {"typo-node", {}, nullptr, "operating mode \"MPS\" is not one of hami-core, mps"},
      {"mig-node", mps_flag, "mps", nullptr},
  };
  for (const auto& c : cases) {
    auto s = MergeNodeSettings(NvidiaConfig{}, nodes, c.node, c.flags);
    if (c.want_mode == nullptr) {
      ASSERT_FALSE(s.ok()) << c.node;
      EXPECT_NE(s.status().message().find(c.want_error), std::string::npos) << s.status().message();
      EXPECT_NE(s.status().message().find(std::string("config.json node \"") + c.node),
                std::string::npos)
          << s.status().message();
      continue;
    }
    ASSERT_TRUE(s.ok()) << c.node << ": " << s.status().ToString();
    EXPECT_EQ(s->operating_mode, c.want_mode) << c.node;
  }
}

// Whether kubelet is told each GPU's NUMA node: on unless HAMi's enableNumaTopology says
// otherwise, device-config.yaml < the node's config.json entry < the flag.
TEST(MergeTest, NumaTopologyTable) {
  NvidiaConfig off;
  off.enable_numa_topology = false;
  NvidiaConfig on;
  on.enable_numa_topology = true;
  std::vector<NodeOverride> nodes{{"numa-node", {}, {}, {}, {}, {}, {}, true},
                                  {"flat-node", {}, {}, {}, {}, {}, {}, false},
                                  {"plain-node", {}, {}, {}, {}, {}, {}, {}}};
  FlagOverrides flag_on;
  flag_on.numa_topology = true;
  FlagOverrides flag_off;
  flag_off.numa_topology = false;
  struct Case {
    NvidiaConfig device;
    const char* node;
    FlagOverrides flags;
    bool want;
  };
  const Case cases[] = {
      {NvidiaConfig{}, "other", {}, true},  // vgpu's default
      {off, "other", {}, false},            // HAMi's default, written by the chart
      {on, "other", {}, true},
      {off, "plain-node", {}, false},  // an entry without the key changes nothing
      {off, "numa-node", {}, true},    // the node's entry wins over device-config.yaml
      {on, "flat-node", {}, false},
      {off, "numa-node", flag_off, false},  // the flag wins over both
      {NvidiaConfig{}, "other", flag_off, false},
      {off, "flat-node", flag_on, true},
  };
  for (const auto& c : cases) {
    auto s = MergeNodeSettings(c.device, nodes, c.node, c.flags);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto shown = [](std::optional<bool> v) { return v ? (*v ? "true" : "false") : "unset"; };
    EXPECT_EQ(s->numa_topology, c.want)
        << c.node << ", device-config.yaml " << shown(c.device.enable_numa_topology) << ", flag "
        << shown(c.flags.numa_topology);
  }
}

}  // namespace
}  // namespace vgpu::config
