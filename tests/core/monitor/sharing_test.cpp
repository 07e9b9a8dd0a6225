#include "core/monitor/sharing.h"

#include <gtest/gtest.h>

namespace vgpu::monitor {
namespace {

constexpr Sharing kA = Sharing::kAlone;
constexpr Sharing kS = Sharing::kShared;

TEST(DecideSharing, OnlyContainersOnTheGpuCount) {
  struct Case {
    const char* name;
    std::vector<GpuClaim> claims;
    std::map<std::string, int> outside;
    std::vector<Sharing> want;
  };
  const Case cases[] = {
      {"one container on its GPU", {{"a", "G0", true}}, {}, {kA}},
      {"one idle container", {{"a", "G0", false}}, {}, {kA}},
      {"two on one GPU", {{"a", "G0", true}, {"b", "G0", true}}, {}, {kS, kS}},
      {"an idle one makes nobody shared; it would share if it started",
       {{"a", "G0", true}, {"b", "G0", false}},
       {},
       {kA, kS}},
      {"two idle ones are alone", {{"a", "G0", false}, {"b", "G0", false}}, {}, {kA, kA}},
      {"different GPUs", {{"a", "G0", true}, {"b", "G1", true}}, {}, {kA, kA}},
      {"three, one idle",
       {{"a", "G0", true}, {"b", "G0", true}, {"c", "G0", false}},
       {},
       {kS, kS, kS}},
      {"two regions of one container are one user",
       {{"a", "G0", true}, {"a", "G0", false}},
       {},
       {kA, kA}},
      {"a container on two GPUs, shared on one",
       {{"a", "G0", true}, {"a", "G1", true}, {"b", "G1", true}},
       {},
       {kA, kS, kS}},
      {"a process of no container shares the GPU", {{"a", "G0", true}}, {{"G0", 1}}, {kS}},
      {"... on another GPU it does not", {{"a", "G0", true}}, {{"G1", 2}}, {kA}},
      {"... and an idle container would share", {{"a", "G0", false}}, {{"G0", 1}}, {kS}},
      {"no claims", {}, {{"G0", 1}}, {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DecideSharing(c.claims, c.outside), c.want) << c.name;
  }
}

}  // namespace
}  // namespace vgpu::monitor
