#include "core/monitor/container_folder.h"

#include <gtest/gtest.h>

namespace vgpu::monitor {
namespace {

TEST(DecideContainerState, TheWorstFindingWins) {
  struct Case {
    const char* name;
    FolderFindings f;
    ContainerState want;
  };
  const Case cases[] = {
      {"nothing there yet", {}, ContainerState::kOk},
      {"one region", {.usable = 1}, ContainerState::kOk},
      {"being created", {.usable = 1, .pending = 1}, ContainerState::kPending},
      {"a file refused", {.usable = 1, .pending = 1, .refused = 1}, ContainerState::kUnusable},
      {"the folder unreadable", {.unreadable = true}, ContainerState::kUnusable},
      {"too many entries", {.entries_truncated = true, .refused = 2}, ContainerState::kOverLimits},
      {"too many region files",
       {.region_files_ignored = 1, .usable = 4},
       ContainerState::kOverLimits},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DecideContainerState(c.f), c.want) << c.name;
  }
}

TEST(OverLimitsMessage, NamesWhatWasExceeded) {
  EXPECT_EQ(OverLimitsMessage({.usable = 1}), "");
  const std::string entries = OverLimitsMessage({.entries_truncated = true});
  EXPECT_TRUE(
      entries.starts_with("holds more than 256 entries; the monitor reads at most 256 "
                          "entries and 4 region files"))
      << entries;
  const std::string both =
      OverLimitsMessage({.entries_truncated = true, .region_files_ignored = 9});
  EXPECT_TRUE(both.starts_with("holds more than 256 entries and more than 4 *.cache files;"))
      << both;
}

// Names in a container's folder are the tenant's: a newline would forge a log line, an escape
// sequence would drive the operator's terminal in `vgpu top`, bytes that are not UTF-8 would break
// the JSON answer.
TEST(SafeText, KeepsPrintableAsciiAndEscapesTheRest) {
  EXPECT_EQ(SafeText("r.cache"), "r.cache");
  EXPECT_EQ(SafeText("a\nvgpu-monitor: removed /"), "a\\x0avgpu-monitor: removed /");
  EXPECT_EQ(SafeText("\x1b[2J\xff\\"), "\\x1b[2J\\xff\\x5c");
  EXPECT_EQ(SafeText(std::string(300, 'x'), 10), "xxxxxxxxxx...");
}

}  // namespace
}  // namespace vgpu::monitor
