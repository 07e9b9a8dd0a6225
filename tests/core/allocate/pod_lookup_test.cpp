#include "core/allocate/pod_lookup.h"

#include <gtest/gtest.h>

namespace vgpu::allocate {
namespace {

// A pod bound to `vgpu_node` (spec.nodeName), unless `bound` is false: its bind wrote the
// annotations but has not bound it yet.
PodView Pod(std::string name, std::string phase, const std::string& bind_phase,
            const std::string& vgpu_node, const std::string& bind_time = "100", bool bound = true) {
  PodView p;
  p.ns = "default";
  p.name = std::move(name);
  p.phase = std::move(phase);
  if (bound) p.node_name = vgpu_node;
  if (!bind_phase.empty()) p.annotations["hami.io/bind-phase"] = bind_phase;
  if (!vgpu_node.empty()) p.annotations["hami.io/vgpu-node"] = vgpu_node;
  if (!bind_time.empty()) p.annotations["hami.io/bind-time"] = bind_time;
  return p;
}

struct LookupCase {
  const char* name;
  std::vector<PodView> pods;
  std::optional<PodKey> owner;
  std::optional<size_t> want;  // nullopt = NotFound
};

TEST(FindAllocatingPod, Table) {
  const std::vector<LookupCase> cases = {
      {"empty node", {}, std::nullopt, std::nullopt},
      {"single allocating pod", {Pod("a", "Pending", "allocating", "n1")}, std::nullopt, 0},
      {"other node ignored", {Pod("a", "Pending", "allocating", "n2")}, std::nullopt, std::nullopt},
      {"running pod ignored",
       {Pod("a", "Running", "allocating", "n1")},
       std::nullopt,
       std::nullopt},
      {"success phase ignored", {Pod("a", "Pending", "success", "n1")}, std::nullopt, std::nullopt},
      {"failed phase ignored", {Pod("a", "Pending", "failed", "n1")}, std::nullopt, std::nullopt},
      {"no annotations", {Pod("a", "Pending", "", "")}, std::nullopt, std::nullopt},
      {"lock owner wins over earlier bind",
       {Pod("a", "Pending", "allocating", "n1", "10"),
        Pod("b", "Pending", "allocating", "n1", "20")},
       PodKey{"default", "b"},
       1},
      {"lock owner no longer allocating falls back",
       {Pod("a", "Pending", "allocating", "n1", "10"), Pod("b", "Pending", "success", "n1", "5")},
       PodKey{"default", "b"},
       0},
      {"lock owner on another node falls back",
       {Pod("a", "Pending", "allocating", "n2"), Pod("b", "Pending", "allocating", "n1")},
       PodKey{"default", "a"},
       1},
      {"lock owner not yet bound is not the pod kubelet admits",
       {Pod("a", "Pending", "allocating", "n1", "10"),
        Pod("b", "Pending", "allocating", "n1", "20", /*bound=*/false)},
       PodKey{"default", "b"},
       0},
      {"pod not yet bound ignored",
       {Pod("a", "Pending", "allocating", "n1", "10", /*bound=*/false)},
       std::nullopt,
       std::nullopt},
      {"lock owner missing falls back",
       {Pod("a", "Pending", "allocating", "n1")},
       PodKey{"default", "gone"},
       0},
      {"lock owner in other namespace is another pod",
       {Pod("a", "Pending", "allocating", "n1")},
       PodKey{"other", "a"},
       0},
      {"earliest bind-time first",
       {Pod("late", "Pending", "allocating", "n1", "300"),
        Pod("early", "Pending", "allocating", "n1", "200")},
       std::nullopt,
       1},
      {"unparsable bind-time sorts last",
       {Pod("bad", "Pending", "allocating", "n1", "x"),
        Pod("ok", "Pending", "allocating", "n1", "9")},
       std::nullopt,
       1},
  };
  for (const auto& c : cases) {
    auto got = FindAllocatingPod("n1", c.owner, c.pods);
    if (c.want) {
      ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
      EXPECT_EQ(*got, *c.want) << c.name;
    } else {
      ASSERT_FALSE(got.ok()) << c.name;
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << c.name;
      EXPECT_NE(got.status().message().find("n1"), std::string::npos) << c.name;
    }
  }
}

TEST(FindAllocatingPod, NotFoundMessageNamesTheLockOwner) {
  auto got = FindAllocatingPod("n1", PodKey{"ns", "owner"}, {});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("ns/owner"), std::string::npos);
}

struct AdmittedCase {
  const char* name;
  std::vector<PodView> pods;
  std::optional<PodKey> owner;
  std::vector<KubeletPod> kubelet;
  std::optional<size_t> want;  // nullopt = an error of code `error`
  StatusCode error = StatusCode::kNotFound;
};

TEST(FindAdmittedTarget, Table) {
  const std::vector<AdmittedCase> cases = {
      {"the pod kubelet lists unserved wins over the lock owner",
       {Pod("a", "Pending", "allocating", "n1", "10"),
        Pod("b", "Pending", "allocating", "n1", "20")},
       PodKey{"default", "a"},
       {{"default", "a", false}, {"default", "b", true}},
       1},
      {"served pods are not candidates",
       {Pod("a", "Pending", "allocating", "n1", "10"),
        Pod("b", "Pending", "allocating", "n1", "20")},
       std::nullopt,
       {{"default", "a", false}, {"default", "b", false}},
       0},
      {"two listed unserved: the earlier bind, as without kubelet's list",
       {Pod("a", "Pending", "allocating", "n1", "30"),
        Pod("b", "Pending", "allocating", "n1", "20")},
       std::nullopt,
       {{"default", "a", true}, {"default", "b", true}},
       1},
      {"a deleted pod kubelet admits is refused",
       {Pod("a", "Pending", "allocating", "n1", "10")},
       PodKey{"default", "a"},
       {{"default", "gone", true}},
       std::nullopt,
       StatusCode::kFailedPrecondition},
      {"a deleted pod already served is not what kubelet admits",
       {Pod("a", "Pending", "allocating", "n1", "10")},
       PodKey{"default", "a"},
       {{"default", "gone", false}},
       0},
      {"kubelet lists nothing: the lock decides",
       {Pod("a", "Pending", "allocating", "n1", "10"),
        Pod("b", "Pending", "allocating", "n1", "20")},
       PodKey{"default", "b"},
       {},
       1},
      {"the listed pod is not waiting, none else: not found",
       {Pod("a", "Running", "success", "n1", "10")},
       std::nullopt,
       {{"default", "a", true}},
       std::nullopt},
      {"the listed pod in another namespace is another pod",
       {Pod("a", "Pending", "allocating", "n1", "10")},
       std::nullopt,
       {{"other", "a", true}},
       std::nullopt,
       StatusCode::kFailedPrecondition},
  };
  for (const auto& c : cases) {
    auto got = FindAdmittedTarget("n1", c.owner, c.pods, {}, c.kubelet);
    if (c.want) {
      ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().ToString();
      EXPECT_EQ(got->pod, *c.want) << c.name;
      EXPECT_FALSE(got->owed_container) << c.name;
    } else {
      ASSERT_FALSE(got.ok()) << c.name;
      EXPECT_EQ(got.status().code(), c.error) << c.name << ": " << got.status().ToString();
    }
  }
}

// A pod whose answer kubelet gave to a deleted pod is owed it again when kubelet admits it, even
// while an allocating pod bound earlier waits.
TEST(FindAdmittedTarget, OwedPodKubeletAdmitsGetsItsAnswerAgain) {
  std::vector<PodView> pods = {Pod("early", "Pending", "allocating", "n1", "10"),
                               Pod("owed", "Pending", "success", "n1", "20")};
  pods[1].uid = "uid-owed";
  const std::vector<OwedAnswer> owed = {{"uid-owed", "main", "uid-victim"}};
  auto got = FindAdmittedTarget("n1", std::nullopt, pods, owed,
                                {{"default", "early", false}, {"default", "owed", true}});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->pod, 1u);
  EXPECT_EQ(got->owed_container, std::optional<std::string>("main"));
}

}  // namespace
}  // namespace vgpu::allocate
