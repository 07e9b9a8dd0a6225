#include "sim/cluster/scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/cluster/generator.h"

namespace vgpu::sim {
namespace {

TEST(Scenario, ParsesNodesPodsAndExpandsCounts) {
  const char* yaml = R"(
name: t
deviceSplitCount: 4
policies: [{node: spread, gpu: binpack}]
nodes:
  - name: n
    count: 2
    gpus: [{model: "NVIDIA A100", memory: 40960, count: 2, numa: 1}]
  - name: solo
    gpus: [{model: T4, memory: 15360, uuids: [GPU-x]}]
pods:
  - {name: late, arrival: 5, gpu: 1, priority: 1000}
  - {name: p, count: 3, arrival: 1, interval: 0.5, gpumem: 3000, gpucores: 30, duration: 9,
     annotations: {nvidia.com/use-gputype: a100}}
)";
  Result<Scenario> sc = ParseScenarioYaml(yaml);
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->name, "t");
  EXPECT_EQ(sc->split_count, 4);
  ASSERT_EQ(sc->policies.size(), 1u);
  EXPECT_EQ(sc->policies[0], (PolicyPair{"spread", "binpack"}));
  ASSERT_EQ(sc->nodes.size(), 3u);
  EXPECT_EQ(sc->nodes[0].name, "n-0");
  EXPECT_EQ(sc->nodes[1].name, "n-1");
  EXPECT_EQ(sc->nodes[2].name, "solo");
  ASSERT_EQ(sc->nodes[0].gpus.size(), 2u);
  EXPECT_EQ(sc->nodes[0].gpus[1].numa, 1);
  EXPECT_NE(sc->nodes[0].gpus[0].uuid, sc->nodes[0].gpus[1].uuid);
  EXPECT_NE(sc->nodes[0].gpus[0].uuid, sc->nodes[1].gpus[0].uuid);
  EXPECT_EQ(sc->nodes[2].gpus[0].uuid, "GPU-x");
  // Sorted by arrival: p-0 (1.0), p-1 (1.5), p-2 (2.0), late (5).
  ASSERT_EQ(sc->pods.size(), 4u);
  EXPECT_EQ(sc->pods[0].name, "p-0");
  EXPECT_DOUBLE_EQ(sc->pods[2].arrival_s, 2.0);
  EXPECT_EQ(sc->pods[3].name, "late");
  EXPECT_EQ(sc->pods[1].mem_mib, 3000);
  EXPECT_EQ(sc->pods[1].cores, 30);
  EXPECT_FALSE(sc->pods[1].gpus.has_value());
  EXPECT_EQ(sc->pods[1].duration_s, 9.0);
  EXPECT_EQ(sc->pods[1].annotations.at("nvidia.com/use-gputype"), "a100");
  EXPECT_EQ(sc->pods[3].priority, 1000);
  EXPECT_FALSE(sc->pods[1].priority.has_value());
}

TEST(Scenario, DefaultPolicyWhenNoneGiven) {
  Result<Scenario> sc = ParseScenarioYaml("nodes: [{name: a, gpus: [{model: m, memory: 1}]}]");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->policies.size(), 1u);
  EXPECT_EQ(sc->policies[0], PolicyPair{});
}

struct BadCase {
  const char* yaml;
  const char* message_part;
};

// quotas: every key form the extender reads, values kept as written, names defaulted by position.
TEST(Scenario, ParsesQuotas) {
  Result<Scenario> sc = ParseScenarioYaml(R"(
nodes: [{name: a, gpus: [{model: m, memory: 1}]}]
quotas:
  - {namespace: team-a, name: gpu, hard: {limits.nvidia.com/gpumem: 20Gi, requests.nvidia.com/gpucores: "100"}}
  - {hard: {nvidia.com/gpumem: 1000}}
)");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->quotas.size(), 2u);
  EXPECT_EQ(sc->quotas[0].ns, "team-a");
  EXPECT_EQ(sc->quotas[0].name, "gpu");
  EXPECT_EQ(sc->quotas[0].hard,
            (std::map<std::string, std::string>{{"limits.nvidia.com/gpumem", "20Gi"},
                                                {"requests.nvidia.com/gpucores", "100"}}));
  EXPECT_EQ(sc->quotas[1].ns, "default");
  EXPECT_EQ(sc->quotas[1].name, "quota-1");
  EXPECT_EQ(sc->quotas[1].hard.at("nvidia.com/gpumem"), "1000");
}

// cordons: a node's GPUs by UUID, from `at` (default 0) until `until` (absent: the end).
TEST(Scenario, ParsesCordons) {
  Result<Scenario> sc = ParseScenarioYaml(R"(
nodes: [{name: a, gpus: [{model: m, memory: 1, count: 2, uuids: [GPU-0, GPU-1]}]}]
cordons:
  - {node: a, gpus: [GPU-1]}
  - {node: a, gpus: [GPU-0, GPU-1], at: 2.5, until: 7}
)");
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_EQ(sc->cordons.size(), 2u);
  EXPECT_EQ(sc->cordons[0].node, "a");
  EXPECT_EQ(sc->cordons[0].gpus, (std::vector<std::string>{"GPU-1"}));
  EXPECT_EQ(sc->cordons[0].at_s, 0);
  EXPECT_FALSE(sc->cordons[0].until_s);
  EXPECT_EQ(sc->cordons[1].gpus.size(), 2u);
  EXPECT_EQ(sc->cordons[1].at_s, 2.5);
  EXPECT_EQ(sc->cordons[1].until_s, 7);
}

TEST(Scenario, BadInputGivesErrorNamingTheProblem) {
  const BadCase cases[] = {
      {"[1, 2", "not valid YAML"},
      {"- a\n- b", "top level"},
      {"nodes: []", "non-empty"},
      {"nodes: [{name: a}]", "gpus"},
      {"nodes: [{name: a, gpus: [{memory: 1}]}]", "model"},
      {"nodes: [{name: a, gpus: [{model: m, memory: lots}]}]", "'lots'"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 0}]}]", "memory"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1, count: 2, uuids: [x]}]}]", "uuids"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}, {name: a, gpus: [{model: m, memory: "
       "1}]}]",
       "repeated"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}], colour: red}]", "unknown key 'colour'"},
      {"bogus: 1\nnodes: [{name: a, gpus: [{model: m, memory: 1}]}]", "unknown key 'bogus'"},
      {"policies: [{node: tightest}]\nnodes: [{name: a, gpus: [{model: m, memory: 1}]}]",
       "unknown node policy 'tightest'"},
      {"policies: [{gpu: random}]\nnodes: [{name: a, gpus: [{model: m, memory: 1}]}]",
       "GPU scheduler policy \"random\" has the unknown word \"random\""},
      {"policies: [{gpu: \"binpack,spread\"}]\nnodes: [{name: a, gpus: [{model: m, memory: 1}]}]",
       "both binpack and spread"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\npods: [{name: p, gpucores: 101}]",
       "gpucores"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\npods: [{name: p, gpumem-percentage: "
       "-1}]",
       "percentage"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\npods: [{gpu: 1}]", "name"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\npods: [{name: p}, {name: p}]",
       "repeated"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\npods: [{name: p, duration: 0}]",
       "duration"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\npods: [{name: p, annotations: [x]}]",
       "annotations"},
      {"deviceSplitCount: 0\nnodes: [{name: a, gpus: [{model: m, memory: 1}]}]",
       "deviceSplitCount"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}], topology: nvlink-everywhere}]",
       "node 'a': topology: bad entry 'nvlink-everywhere'"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1, count: 2}], topology: 0-2=nv4}]",
       "beyond the 2 GPUs"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}], topology: [x]}]", "topology"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\nquotas: {a: 1}", "quotas: expected"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\nquotas: [{namespace: x}]",
       "quotas[0].hard"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\nquotas: [{hard: {pods: 3}}]",
       "quotas[0].hard.pods: not a vGPU quota key"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\n"
       "quotas: [{hard: {limits.nvidia.com/gpumem: lots}}]",
       "quotas[0].hard.limits.nvidia.com/gpumem"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\n"
       "quotas: [{hard: {nvidia.com/gpucores: 10}, colour: red}]",
       "unknown key 'colour'"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\n"
       "quotas: [{name: q, hard: {nvidia.com/gpucores: 10}}, {name: q, hard: {nvidia.com/gpucores: "
       "20}}]",
       "quota 'default/q' is repeated"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\ncordons: {a: 1}", "cordons: expected"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\ncordons: [{node: b, gpus: [x]}]",
       "cordons[0].node: no node 'b'"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\ncordons: [{node: a}]",
       "cordons[0].gpus: expected a non-empty list"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1, uuids: [GPU-0]}]}]\n"
       "cordons: [{node: a, gpus: [GPU-9]}]",
       "cordons[0].gpus: 'GPU-9' is not a GPU of node a (its first is GPU-0"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1, uuids: [GPU-0]}]}]\n"
       "cordons: [{node: a, gpus: [GPU-0], at: 5, until: 5}]",
       "cordons[0].until: must be after at"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1, uuids: [GPU-0]}]}]\n"
       "cordons: [{node: a, gpus: [GPU-0], at: -1}]",
       "cordons[0].at: must be 0.."},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1, uuids: [GPU-0]}]}]\n"
       "cordons: [{node: a, gpus: [GPU-0], from: 1}]",
       "unknown key 'from'"},
  };
  for (const BadCase& c : cases) {
    Result<Scenario> sc = ParseScenarioYaml(c.yaml);
    ASSERT_FALSE(sc.ok()) << c.yaml;
    EXPECT_EQ(sc.status().code(), StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_NE(sc.status().message().find(c.message_part), std::string::npos)
        << c.yaml << " -> " << sc.status().message();
  }
}

// Counts expand only within ScenarioLimits, checked while expanding (a file of entries each within
// its own bound cannot add up to millions of nodes); sizes and times are bounded and finite.
// Before: `count` was checked per entry only (100,000 nodes, 1,000,000 pods each), times could be
// NaN or infinite, and memory and gpumem had no ceiling.
TEST(Scenario, CountsAndSizesAreBounded) {
  std::string many_nodes = "nodes:\n";
  for (int i = 0; i < 2; ++i) {
    many_nodes +=
        "  - {name: n" + std::to_string(i) + ", count: 6000, gpus: [{model: m, memory: 1}]}\n";
  }
  std::string many_gpus = "nodes:\n";
  for (int i = 0; i < 2; ++i) {
    many_gpus += "  - {name: n" + std::to_string(i) +
                 ", count: 1000, gpus: [{model: m, memory: 1, count: 64}]}\n";
  }
  const std::string node = "nodes: [{name: a, gpus: [{model: m, memory: 1}]}]\n";
  const std::string many_pods =
      node + "pods:\n  - {name: p, count: 60000}\n  - {name: q, count: 60000}\n";
  const struct {
    std::string yaml;
    std::string message;
  } cases[] = {
      {many_nodes, "nodes[1]: more than 10000 nodes in the scenario"},
      {many_gpus, "nodes[1]: more than 100000 GPUs in the scenario"},
      {many_pods, "pods[1]: more than 100000 pods in the scenario"},
      {"nodes: [{name: a, count: 10001, gpus: [{model: m, memory: 1}]}]",
       "nodes[0].count: must be 1..10000"},
      {node + "pods: [{name: p, count: 100001}]", "pods[0].count: must be 1..100000"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1, count: 40}, {model: m, memory: 1, count: "
       "40}]}]",
       "nodes[0].gpus: more than 64 GPUs on one node"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 16777217}]}]",
       "memory: required, MiB in 1..16777216"},
      {"nodes: [{name: a, gpus: [{model: m, memory: 1, numa: -1}]}]", "numa: must be 0..255"},
      {node + "pods: [{name: p, gpumem: 16777217}]", "gpumem must be 0..16777216"},
      {node + "pods: [{name: p, arrival: .nan}]",
       "pods[0].arrival: must be 0..1e+09 seconds, got nan"},
      {node + "pods: [{name: p, arrival: .inf}]",
       "pods[0].arrival: must be 0..1e+09 seconds, got inf"},
      {node + "pods: [{name: p, arrival: -1}]", "pods[0].arrival: must be 0..1e+09"},
      {node + "pods: [{name: p, interval: .inf, count: 2}]", "pods[0].interval: must be 0..1e+09"},
      {node + "pods: [{name: p, duration: .nan}]", "pods[0].duration: must be 0..1e+09"},
      {node + "pods: [{name: p, arrival: 900000000, interval: 900000000, count: 2}]",
       "pod 'default/p-1': arrival: must be 0..1e+09 seconds"},
  };
  for (const auto& c : cases) {
    Result<Scenario> sc = ParseScenarioYaml(c.yaml);
    ASSERT_FALSE(sc.ok()) << c.yaml;
    EXPECT_NE(sc.status().message().find(c.message), std::string::npos)
        << c.yaml.substr(0, 200) << " -> " << sc.status().message();
  }
  // At the bounds: accepted.
  Result<Scenario> edge = ParseScenarioYaml(
      "nodes: [{name: a, count: 2, gpus: [{model: m, memory: 16777216, count: 64, numa: 255}]}]\n"
      "pods: [{name: p, count: 3, arrival: 1000, interval: 0.5, duration: 1000000000}]");
  ASSERT_TRUE(edge.ok()) << edge.status().message();
  EXPECT_EQ(edge->nodes.size(), 2u);
  EXPECT_EQ(edge->pods.size(), 3u);
  // Built in code (the generator's path): ValidateScenario holds the same totals.
  Scenario big;
  big.nodes.resize(ScenarioLimits::kMaxNodes + 1);
  EXPECT_NE(ValidateScenario(big).message().find("10001 nodes: at most 10000"), std::string::npos);
}

// A node's topology is a preset or the device plugin's own spec text over its GPUs in list order;
// NodeTopology turns it into what the fake GPU backend reports.
TEST(Scenario, NodeTopologyPresetsAndSpecs) {
  const char* yaml = R"(
nodes:
  - {name: pairs, topology: nvlink-pairs, gpus: [{model: m, memory: 1, count: 4}]}
  - {name: pcie, topology: pcie, gpus: [{model: m, memory: 1, count: 2}]}
  - {name: own, topology: "0-2=single+nv8,*=system", gpus: [{model: m, memory: 1, count: 3}]}
  - {name: none, gpus: [{model: m, memory: 1, count: 2}]}
)";
  Result<Scenario> sc = ParseScenarioYaml(yaml);
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  std::vector<codec::DevicePairScores> scores;
  for (const NodeSpec& n : sc->nodes) {
    Result<std::optional<codec::GpuTopology>> t = NodeTopology(n);
    ASSERT_TRUE(t.ok()) << n.name << ": " << t.status().ToString();
    scores.push_back(t->has_value() ? codec::ScoreTopology(**t) : codec::DevicePairScores{});
  }
  const auto score = [&](size_t node, size_t a, size_t b) {
    return scores[node][a].scores.at(sc->nodes[node].gpus[b].uuid);
  };
  // nvlink-pairs: 0-1 and 2-3 four NVLinks under one NUMA node, the rest across the system.
  EXPECT_EQ(score(0, 0, 1), 420);
  EXPECT_EQ(score(0, 2, 3), 420);
  EXPECT_EQ(score(0, 1, 2), 10);
  EXPECT_EQ(score(1, 0, 1), 30);  // pcie: one host bridge, no NVLink
  EXPECT_EQ(score(2, 0, 2), 850);
  EXPECT_EQ(score(2, 0, 1), 10);
  EXPECT_TRUE(scores[3].empty());  // no topology: no scores published
}

TEST(Scenario, BuiltinScenarioParsesWithTwoPolicies) {
  Result<Scenario> sc = ParseScenarioYaml(BuiltinScenarioYaml());
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  EXPECT_EQ(sc->nodes.size(), 3u);
  EXPECT_EQ(sc->pods.size(), 20u);
  ASSERT_EQ(sc->policies.size(), 2u);
  EXPECT_EQ(sc->policies[0].node_policy, "binpack");
  EXPECT_EQ(sc->policies[1].node_policy, "spread");
}

TEST(Scenario, ShippedCopyOfBuiltinScenarioIsIdentical) {
  std::ifstream in(std::string(VGPU_SCENARIO_DIR) + "/binpack-vs-spread.yaml");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), BuiltinScenarioYaml());
}

TEST(Scenario, ShippedScenarioFilesParse) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(VGPU_SCENARIO_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    Result<Scenario> sc = ParseScenarioYaml(text.str());
    EXPECT_TRUE(sc.ok()) << entry.path() << ": " << sc.status().ToString();
    ++files;
  }
  EXPECT_GE(files, 1);
}

}  // namespace
}  // namespace vgpu::sim
