#include "core/sched/preemption.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/sched/fit.h"

namespace vgpu::sched {
namespace {

using nlohmann::json;

GpuDevice Gpu(const std::string& uuid, int64_t mem = 16000) {
  GpuDevice g;
  g.uuid = uuid;
  g.slots = 10;
  g.mem_mib = mem;
  g.cores = 100;
  g.type = "NVIDIA A100";
  return g;
}

// A pod holding `mem` MiB and `cores` % on each listed GPU (one slot each).
PreemptionPod Pod(const std::string& uid, int32_t priority, std::vector<std::string> gpus,
                  int64_t mem, int cores = 0) {
  PreemptionPod p;
  p.uid = uid;
  p.ns = "default";
  p.name = uid;
  p.priority = priority;
  for (const std::string& g : gpus) p.footprint[g] = {1, mem, cores};
  return p;
}

// The node with every pod's footprint counted.
NodeView Node(std::vector<GpuDevice> gpus, const std::vector<PreemptionPod>& pods) {
  NodeView n;
  n.name = "n1";
  n.gpus = std::move(gpus);
  n.usage.resize(n.gpus.size());
  for (const PreemptionPod& p : pods) {
    for (size_t i = 0; i < n.gpus.size(); ++i) {
      auto it = p.footprint.find(n.gpus[i].uuid);
      if (it != p.footprint.end()) n.usage[i] += it->second;
    }
  }
  return n;
}

PodRequest Ask(int count, int64_t mem, int cores = 0) {
  PodRequest r;
  r.app_containers.push_back({count, mem, -1, cores});
  return r;
}

DisruptionBudget Budget(std::map<std::string, std::string> match, int64_t allowed) {
  DisruptionBudget b;
  b.ns = "default";
  b.name = "pdb";
  for (auto& [k, v] : match) b.selector.requirements.push_back({k, LabelRequirement::Op::kIn, {v}});
  b.disruptions_allowed = allowed;
  return b;
}

TEST(SelectVictims, Table) {
  struct Case {
    const char* name;
    std::vector<GpuDevice> gpus;
    std::vector<PreemptionPod> pods;
    PodRequest ask;
    int32_t priority;
    std::vector<DisruptionBudget> budgets;
    bool ok;
    std::vector<std::string> victims;
    int64_t pdb_violations;
  };
  PreemptionPod labelled = Pod("big-protected", 0, {"g0"}, 8000);
  labelled.labels = {{"app", "db"}};
  PreemptionPod leaving = Pod("leaving", 0, {"g0"}, 8000);
  leaving.leaving = true;
  PreemptionPod binding = Pod("binding", 0, {"g0"}, 8000);
  binding.evictable = false;
  PreemptionPod older = Pod("older", 0, {"g0"}, 8000);
  older.start_time = "2026-01-01T00:00:00Z";
  PreemptionPod newer = Pod("newer", 0, {"g0"}, 8000);
  newer.start_time = "2026-06-01T00:00:00Z";
  const Case cases[] = {
      {"one low pod on a full card goes",
       {Gpu("g0")},
       {Pod("low", 0, {"g0"}, 16000)},
       Ask(1, 8000),
       100,
       {},
       true,
       {"low"},
       0},
      {"equal priority is never a victim",
       {Gpu("g0")},
       {Pod("peer", 100, {"g0"}, 16000)},
       Ask(1, 8000),
       100,
       {},
       false,
       {},
       0},
      {"higher priority is never a victim",
       {Gpu("g0")},
       {Pod("high", 1000, {"g0"}, 12000), Pod("low", 0, {"g0"}, 4000)},
       Ask(1, 8000),
       100,
       {},
       false,
       {},
       0},
      {"only as many as needed: one of two halves",
       {Gpu("g0")},
       {Pod("a", 0, {"g0"}, 8000), Pod("b", 0, {"g0"}, 8000)},
       Ask(1, 8000),
       100,
       {},
       true,
       {"b"},
       0},
      {"lowest priority goes first",
       {Gpu("g0")},
       {Pod("mid", 50, {"g0"}, 8000), Pod("lowest", 10, {"g0"}, 8000)},
       Ask(1, 8000),
       100,
       {},
       true,
       {"lowest"},
       0},
      {"fewest victims among equal priority: the big pod, not three small",
       {Gpu("g0")},
       {Pod("s1", 0, {"g0"}, 2000), Pod("s2", 0, {"g0"}, 2000), Pod("s3", 0, {"g0"}, 2000),
        Pod("big", 0, {"g0"}, 10000)},
       Ask(1, 6000),
       100,
       {},
       true,
       {"big"},
       0},
      {"victims on the card that frees, none on the other",
       {Gpu("g0"), Gpu("g1")},
       {Pod("high0", 500, {"g0"}, 10000), Pod("low0", 0, {"g0"}, 6000),
        Pod("low1", 0, {"g1"}, 12000)},
       Ask(1, 10000),
       100,
       {},
       true,
       {"low1"},
       0},
      {"a two-GPU pod needs two cards freed",
       {Gpu("g0"), Gpu("g1"), Gpu("g2")},
       {Pod("a", 0, {"g0"}, 16000), Pod("b", 10, {"g1"}, 16000), Pod("c", 20, {"g2"}, 16000)},
       Ask(2, 16000),
       100,
       {},
       true,
       {"b", "a"},
       0},
      {"a multi-GPU victim counts once and frees both cards",
       {Gpu("g0"), Gpu("g1")},
       {Pod("pair", 0, {"g0", "g1"}, 16000)},
       Ask(2, 8000),
       100,
       {},
       true,
       {"pair"},
       0},
      {"cores, not memory, are what is short",
       {Gpu("g0")},
       {Pod("hog", 0, {"g0"}, 1000, 90), Pod("small", 0, {"g0"}, 1000, 10)},
       Ask(1, 1000, 50),
       100,
       {},
       true,
       {"hog"},
       0},
      {"nothing to gain: the card is too small",
       {Gpu("g0", 8000)},
       {Pod("low", 0, {"g0"}, 8000)},
       Ask(1, 12000),
       100,
       {},
       false,
       {},
       0},
      {"prefer the pod no PDB protects",
       {Gpu("g0")},
       {labelled, Pod("small-free", 0, {"g0"}, 8000)},
       Ask(1, 8000),
       100,
       {Budget({{"app", "db"}}, 0)},
       true,
       {"small-free"},
       0},
      {"a PDB-protected pod goes when nothing else frees enough, counted",
       {Gpu("g0")},
       {labelled, Pod("other", 0, {"g0"}, 8000)},
       Ask(1, 16000),
       100,
       {Budget({{"app", "db"}}, 0)},
       true,
       {"big-protected", "other"},
       1},
      {"a budget that allows a disruption protects nothing",
       {Gpu("g0")},
       {labelled, Pod("small-free", 0, {"g0"}, 4000)},
       Ask(1, 8000),
       100,
       {Budget({{"app", "db"}}, 1)},
       true,
       {"big-protected"},
       0},
      {"a pod already leaving frees its share with no victim",
       {Gpu("g0")},
       {leaving, Pod("low", 0, {"g0"}, 8000)},
       Ask(1, 8000),
       100,
       {},
       true,
       {},
       0},
      {"a pod whose bind is in flight is never a victim",
       {Gpu("g0")},
       {binding, Pod("low", 0, {"g0"}, 8000)},
       Ask(1, 16000),
       100,
       {},
       false,
       {},
       0},
      {"the newer of two equal pods goes",
       {Gpu("g0")},
       {older, newer},
       Ask(1, 8000),
       100,
       {},
       true,
       {"newer"},
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const VictimChoice got =
        SelectVictims(Node(c.gpus, c.pods), c.ask, c.priority, c.pods, c.budgets);
    EXPECT_EQ(got.ok, c.ok) << got.message;
    EXPECT_EQ(got.victims, c.victims);
    EXPECT_EQ(got.pdb_violations, c.pdb_violations);
    if (!got.ok) {
      EXPECT_FALSE(got.message.empty());
    }
  }
}

// Whatever the pods, the victims free enough, never include a pod of equal or higher priority,
// and none of them could have stayed.
TEST(SelectVictims, VictimsAreSufficientLowerAndMinimal) {
  std::vector<GpuDevice> gpus = {Gpu("g0"), Gpu("g1")};
  for (int seed = 0; seed < 200; ++seed) {
    std::vector<PreemptionPod> pods;
    unsigned x = static_cast<unsigned>(seed) * 2654435761u + 1;
    const auto next = [&x](unsigned mod) {
      x = x * 1103515245u + 12345u;
      return (x >> 16) % mod;
    };
    int64_t used[2] = {0, 0};
    for (int i = 0; i < 8; ++i) {
      const unsigned g = next(2);
      const int64_t mem = 1000 * static_cast<int64_t>(1 + next(6));
      if (used[g] + mem > 16000) continue;
      used[g] += mem;
      pods.push_back(Pod("p" + std::to_string(i), static_cast<int32_t>(next(4)) * 10,
                         {g == 0 ? "g0" : "g1"}, mem));
    }
    const NodeView node = Node(gpus, pods);
    const PodRequest ask = Ask(1, 1000 * static_cast<int64_t>(4 + next(12)));
    const int32_t prio = 20;
    const VictimChoice got = SelectVictims(node, ask, prio, pods, {});
    if (!got.ok) continue;
    std::vector<PreemptionPod> kept;
    for (const PreemptionPod& p : pods) {
      const bool victim =
          std::find(got.victims.begin(), got.victims.end(), p.uid) != got.victims.end();
      if (victim) {
        EXPECT_LT(p.priority, prio) << "seed " << seed;
      } else {
        kept.push_back(p);
      }
    }
    EXPECT_TRUE(FitPod(Node(gpus, kept), ask).ok) << "seed " << seed;
    for (const std::string& v : got.victims) {
      std::vector<PreemptionPod> with = kept;
      for (const PreemptionPod& p : pods) {
        if (p.uid == v) with.push_back(p);
      }
      EXPECT_FALSE(FitPod(Node(gpus, with), ask).ok) << "seed " << seed << " victim " << v;
    }
  }
}

TEST(LabelSelector, ParsesAndMatches) {
  Result<LabelSelector> s = ParseLabelSelector(json::parse(R"({
    "matchLabels": {"app": "db"},
    "matchExpressions": [
      {"key": "tier", "operator": "In", "values": ["a", "b"]},
      {"key": "canary", "operator": "DoesNotExist"},
      {"key": "zone", "operator": "NotIn", "values": ["x"]},
      {"key": "team", "operator": "Exists"}]})"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_TRUE(s->Matches({{"app", "db"}, {"tier", "a"}, {"team", "t"}}));
  EXPECT_FALSE(s->Matches({{"app", "db"}, {"tier", "c"}, {"team", "t"}}));
  EXPECT_FALSE(s->Matches({{"app", "db"}, {"tier", "a"}, {"team", "t"}, {"canary", "1"}}));
  EXPECT_FALSE(s->Matches({{"app", "db"}, {"tier", "a"}, {"team", "t"}, {"zone", "x"}}));
  EXPECT_FALSE(s->Matches({{"app", "db"}, {"tier", "a"}}));

  EXPECT_FALSE(ParseLabelSelector(json::parse(R"({"matchExpressions":
    [{"key": "a", "operator": "Near", "values": ["b"]}]})"))
                   .ok());
  EXPECT_FALSE(ParseLabelSelector(json::parse(R"({"matchExpressions":
    [{"key": "a", "operator": "In"}]})"))
                   .ok());
  EXPECT_TRUE(ParseLabelSelector(json(nullptr))->empty());
}

TEST(DisruptionBudget, ReadsStatusAndSelector) {
  Result<DisruptionBudget> b = ReadDisruptionBudget(json::parse(R"({
    "metadata": {"namespace": "ml", "name": "db"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
    "status": {"disruptionsAllowed": 2, "disruptedPods": {"db-0": "2026-12-01T00:00:00Z"}}})"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->ns, "ml");
  EXPECT_EQ(b->disruptions_allowed, 2);
  EXPECT_EQ(b->disrupted_pods, std::set<std::string>{"db-0"});
  EXPECT_TRUE(b->selector.Matches({{"app", "db"}}));
  EXPECT_FALSE(ReadDisruptionBudget(json::parse(R"({"metadata": {"name": "x"},
    "spec": {"selector": {"matchLabels": {"app": 3}}}})"))
                   .ok());
}

// kube-scheduler charges a budget once per matching pod, most important first: with one
// disruption allowed the first pod is free to go and the second violates the budget.
TEST(SelectVictims, BudgetChargedMostImportantFirst) {
  PreemptionPod a = Pod("a", 10, {"g0"}, 8000);
  PreemptionPod b = Pod("b", 0, {"g0"}, 8000);
  a.labels = b.labels = {{"app", "db"}};
  const std::vector<PreemptionPod> pods = {a, b};
  const VictimChoice got = SelectVictims(Node({Gpu("g0")}, pods), Ask(1, 16000), 100, pods,
                                         {Budget({{"app", "db"}}, 1)});
  ASSERT_TRUE(got.ok);
  EXPECT_EQ(got.victims, (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(got.pdb_violations, 1);
}

}  // namespace
}  // namespace vgpu::sched
