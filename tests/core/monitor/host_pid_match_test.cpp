#include "core/monitor/host_pid_match.h"

#include <gtest/gtest.h>

namespace vgpu::monitor {
namespace {

const FileId kRegion{253, 1, 1000};
const FileId kOther{253, 1, 2000};

HostProcess Proc(int32_t host, std::vector<int32_t> ns, uint64_t start, std::vector<FileId> maps,
                 bool maps_read = true) {
  return HostProcess{host, std::move(ns), start, maps_read, std::move(maps)};
}

SlotMatch Matched(int32_t host) {
  return {SlotState::kMatched, host};
}
const SlotMatch kGone{SlotState::kGone, 0};
const SlotMatch kUnverified{SlotState::kUnverified, 0};

TEST(MatchSlots, NeedsPidStartTimeAndTheMapping) {
  struct Case {
    const char* name;
    std::vector<SlotIdentity> slots;
    std::vector<HostProcess> procs;
    bool readable;
    std::vector<SlotMatch> want;
  };
  const Case cases[] = {
      {"host namespace: NSpid has one entry",
       {{4242, 77}},
       {Proc(4242, {4242}, 77, {kRegion})},
       true,
       {Matched(4242)}},
      {"container namespace: the last NSpid entry",
       {{7, 77}},
       {Proc(4242, {4242, 7}, 77, {kRegion})},
       true,
       {Matched(4242)}},
      {"two containers with pid 7: the one mapping this region",
       {{7, 77}},
       {Proc(4242, {4242, 7}, 77, {kOther}), Proc(5000, {5000, 7}, 77, {kRegion})},
       true,
       {Matched(5000)}},
      {"start time differs (pid reused)",
       {{7, 77}},
       {Proc(4242, {4242, 7}, 78, {kRegion})},
       true,
       {kGone}},
      {"does not map the region", {{7, 77}}, {Proc(4242, {4242, 7}, 77, {kOther})}, true, {kGone}},
      {"the outer pid is not the slot's",
       {{4242, 77}},
       {Proc(4242, {4242, 7}, 77, {kRegion})},
       true,
       {kGone}},
      {"no such process", {{7, 77}}, {}, true, {kGone}},
      {"free slot", {{0, 0}}, {Proc(1, {1}, 0, {kRegion})}, true, {kGone}},
      {"slot being claimed (no start time yet)",
       {{7, 0}},
       {Proc(4242, {4242, 7}, 0, {kRegion})},
       true,
       {kGone}},
      {"maps unreadable: live, no host pid",
       {{7, 77}},
       {Proc(4242, {4242, 7}, 77, {}, false)},
       true,
       {kUnverified}},
      {"two processes fit (nested namespaces): ambiguous",
       {{7, 77}},
       {Proc(4242, {4242, 7}, 77, {kRegion}), Proc(4300, {4300, 9, 7}, 77, {kRegion})},
       true,
       {kUnverified}},
      {"one fits, another could not be checked",
       {{7, 77}},
       {Proc(4242, {4242, 7}, 77, {kRegion}), Proc(4300, {4300, 7}, 77, {}, false)},
       true,
       {kUnverified}},
      {"proc table unreadable: occupied slots live",
       {{7, 77}, {0, 0}, {8, 0}},
       {},
       false,
       {kUnverified, kGone, kGone}},
      {"several slots",
       {{7, 77}, {8, 88}, {9, 99}},
       {Proc(100, {100, 7}, 77, {kRegion}), Proc(101, {101, 9}, 99, {kRegion})},
       true,
       {Matched(100), kGone, Matched(101)}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(MatchSlots(c.slots, kRegion, c.procs, c.readable), c.want) << c.name;
  }
}

}  // namespace
}  // namespace vgpu::monitor
