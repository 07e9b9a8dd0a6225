#include "core/allocate/misdelivered.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/allocate/pod_lookup.h"

namespace vgpu::allocate {
namespace {

constexpr const char* kGpu = "nvidia.com/gpu";

KubeletAnswer Held(std::string holder, std::string container, const std::string& for_uid,
                   std::string for_container = "main", std::string resource = kGpu) {
  KubeletAnswer a{std::move(holder), std::move(container), std::move(resource), std::nullopt};
  if (!for_uid.empty()) a.written_for = codec::ContainerDirName{for_uid, std::move(for_container)};
  return a;
}

TEST(MisdeliveredAnswers, Table) {
  struct Case {
    const char* name;
    std::vector<KubeletAnswer> answers;
    std::vector<OwedAnswer> want;
  };
  const std::vector<Case> cases = {
      {"nothing held", {}, {}},
      {"each pod holds its own", {Held("a", "main", "a"), Held("b", "main", "b")}, {}},
      {"victim holds the next pod's answer", {Held("v", "main", "p")}, {{"p", "main", "v"}}},
      {"the owed pod got it again", {Held("v", "main", "p"), Held("p", "main", "p")}, {}},
      {"owed for the container that went astray only",
       {Held("v", "main", "p", "side"), Held("p", "main", "p", "main")},
       {{"p", "side", "v"}}},
      {"held twice, owed once",
       {Held("v", "main", "p"), Held("w", "main", "p")},
       {{"p", "main", "v"}}},
      {"answers of other resources ignored", {Held("v", "main", "p", "main", "other.com/x")}, {}},
      {"answers without a container directory ignored", {Held("v", "main", "")}, {}},
      {"own answer under another resource does not count",
       {Held("v", "main", "p"), Held("p", "main", "p", "main", "other.com/x")},
       {{"p", "main", "v"}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MisdeliveredAnswers(c.answers, kGpu), c.want);
  }
}

PodView Pod(const std::string& name, std::string phase, const std::string& bind_phase,
            const std::string& bind_time, bool bound = true) {
  PodView p;
  p.ns = "default";
  p.name = name;
  p.uid = "uid-" + name;
  p.phase = std::move(phase);
  if (bound) p.node_name = "n1";
  p.annotations["hami.io/bind-phase"] = bind_phase;
  p.annotations["hami.io/vgpu-node"] = "n1";
  p.annotations["hami.io/bind-time"] = bind_time;
  return p;
}

TEST(FindAllocationTarget, Table) {
  struct Case {
    const char* name;
    std::vector<PodView> pods;
    std::optional<PodKey> owner;
    std::vector<OwedAnswer> owed;
    std::optional<AllocationTarget> want;  // nullopt: NotFound
  };
  const OwedAnswer owed_p{"uid-p", "main", "uid-v"};
  const std::vector<Case> cases = {
      {"nothing owed: the allocating pod",
       {Pod("q", "Pending", "allocating", "200")},
       std::nullopt,
       {},
       AllocationTarget{0, std::nullopt}},
      {"nothing owed, nothing allocating",
       {Pod("p", "Pending", "success", "100")},
       std::nullopt,
       {},
       std::nullopt},
      {"owed pod alone",
       {Pod("p", "Pending", "success", "100")},
       std::nullopt,
       {owed_p},
       AllocationTarget{0, "main"}},
      {"owed pod bound before the lock owner wins",
       {Pod("q", "Pending", "allocating", "200"), Pod("p", "Pending", "success", "100")},
       PodKey{"default", "q"},
       {owed_p},
       AllocationTarget{1, "main"}},
      {"allocating pod bound before the owed one comes first",
       {Pod("q", "Pending", "allocating", "50"), Pod("p", "Pending", "success", "100")},
       std::nullopt,
       {owed_p},
       AllocationTarget{0, std::nullopt}},
      {"owed pod already running is not owed",
       {Pod("p", "Running", "success", "100")},
       std::nullopt,
       {owed_p},
       std::nullopt},
      {"owed pod not bound here is not owed",
       {Pod("p", "Pending", "success", "100", false)},
       std::nullopt,
       {owed_p},
       std::nullopt},
      {"owed pod marked failed is not owed",
       {Pod("p", "Pending", "failed", "100")},
       std::nullopt,
       {owed_p},
       std::nullopt},
      {"owed pod still allocating (another container left)",
       {Pod("p", "Pending", "allocating", "100")},
       std::nullopt,
       {owed_p},
       AllocationTarget{0, "main"}},
      {"owed pod gone: the allocating one",
       {Pod("q", "Pending", "allocating", "200")},
       std::nullopt,
       {owed_p},
       AllocationTarget{0, std::nullopt}},
      {"two owed: the one bound first",
       {Pod("r", "Pending", "success", "150"), Pod("p", "Pending", "success", "100")},
       std::nullopt,
       {{"uid-r", "main", "uid-w"}, owed_p},
       AllocationTarget{1, "main"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = FindAllocationTarget("n1", c.owner, c.pods, c.owed);
    if (!c.want) {
      EXPECT_FALSE(got.ok());
    } else {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, *c.want);
    }
  }
}

}  // namespace
}  // namespace vgpu::allocate
