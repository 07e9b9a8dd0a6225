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

}  // namespace
}  // namespace vgpu::allocate
