#include "core/monitor/cleanup_rule.h"

#include <gtest/gtest.h>

namespace vgpu::monitor {
namespace {

using std::chrono::seconds;

TEST(ShouldRemoveContainerDir, OnlyGoneIdleAndQuietDirectories) {
  const auto now = std::chrono::system_clock::now();
  const seconds grace{300};
  struct Case {
    const char* name;
    CleanupFacts facts;
    bool want;
  };
  const Case cases[] = {
      {"pod gone, idle, quiet for the grace", {true, false, false, now - grace}, true},
      {"quiet for longer", {true, false, false, now - seconds(3600)}, true},
      {"pod exists", {true, true, false, now - seconds(3600)}, false},
      {"pod view not synced", {false, false, false, now - seconds(3600)}, false},
      {"a live process uses it", {true, false, true, now - seconds(3600)}, false},
      {"changed within the grace", {true, false, false, now - seconds(299)}, false},
      {"changed in the future (clock step)", {true, false, false, now + seconds(10)}, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ShouldRemoveContainerDir(c.facts, now, grace), c.want) << c.name;
  }
}

}  // namespace
}  // namespace vgpu::monitor
