#include "core/monitor/device_use.h"

#include <gtest/gtest.h>

#include "vgpu/region_layout.h"

namespace vgpu::monitor {
namespace {

constexpr int64_t kNow = 1'000'000'000'000;  // CLOCK_MONOTONIC ns
constexpr uint64_t kSec = 1'000'000'000;

TEST(SummarizeDeviceUse, SumsLiveSlotsAndFindsUse) {
  struct Case {
    const char* name;
    std::vector<SlotUse> live;
    bool single_device;
    uint64_t used, buffer, context;
    std::optional<double> last_kernel_ago;
    bool on_gpu;
    std::vector<int32_t> listed;  // pids of the processes listed
  };
  const Case cases[] = {
      {"nothing", {}, true, 0, 0, 0, std::nullopt, false, {}},
      {"memory",
       {{7, 4242, 100, 30, 0}, {8, 0, 50, 0, 0}},
       true,
       180,
       150,
       30,
       std::nullopt,
       true,
       {7, 8}},
      {"idle process of a one-device region is listed",
       {{7, 4242, 0, 0, 0}},
       true,
       0,
       0,
       0,
       std::nullopt,
       false,
       {7}},
      {"... of a multi-device region it is not",
       {{7, 4242, 0, 0, 0}},
       false,
       0,
       0,
       0,
       std::nullopt,
       false,
       {}},
      {"a kernel 2 s ago, no memory",
       {{7, 0, 0, 0, kNow - 2 * kSec}, {8, 0, 0, 0, kNow - 5 * kSec}},
       false,
       0,
       0,
       0,
       2.0,
       true,
       {7, 8}},
      {"a kernel 31 s ago is not use",
       {{7, 0, 0, 0, kNow - 31 * kSec}},
       false,
       0,
       0,
       0,
       31.0,
       false,
       {}},
      {"a kernel stamped after now", {{7, 0, 0, 0, kNow + kSec}}, false, 0, 0, 0, 0.0, true, {7}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const DeviceUse u = SummarizeDeviceUse(c.live, kNow, c.single_device);
    EXPECT_EQ(u.memory_used, c.used);
    EXPECT_EQ(u.memory_buffer, c.buffer);
    EXPECT_EQ(u.memory_context, c.context);
    EXPECT_EQ(u.last_kernel_seconds_ago, c.last_kernel_ago);
    EXPECT_EQ(u.on_gpu, c.on_gpu);
    std::vector<int32_t> listed;
    for (const ProcessView& p : u.processes) listed.push_back(p.pid);
    EXPECT_EQ(listed, c.listed);
  }
  const DeviceUse u = SummarizeDeviceUse({{7, 4242, 100, 30, 0}}, kNow, true);
  ASSERT_EQ(u.processes.size(), 1u);
  EXPECT_EQ(u.processes[0].host_pid, 4242);
  EXPECT_EQ(u.processes[0].memory_bytes, 130u);
}

// The counters are written by the container: any value must give figures that make sense (no
// wrap to a small number, no overflow — UBSan ends the process on one in the dev build).
TEST(SummarizeDeviceUse, ScribbledCountersNeitherWrapNorOverflow) {
  const uint64_t huge = UINT64_MAX - 5;
  const DeviceUse sums =
      SummarizeDeviceUse({{7, 0, huge, huge, 0}, {8, 0, huge, 10, 0}}, kNow, true);
  EXPECT_EQ(sums.memory_used, UINT64_MAX);
  EXPECT_EQ(sums.memory_buffer, UINT64_MAX);
  EXPECT_EQ(sums.memory_context, UINT64_MAX);
  ASSERT_EQ(sums.processes.size(), 2u);
  EXPECT_EQ(sums.processes[0].memory_bytes, UINT64_MAX);
  EXPECT_TRUE(sums.on_gpu);
  for (const uint64_t stamp : {uint64_t{1} << 63, UINT64_MAX, (uint64_t{1} << 63) + 1}) {
    SCOPED_TRACE(stamp);
    const DeviceUse u = SummarizeDeviceUse({{7, 0, 0, 0, stamp}}, kNow, true);
    EXPECT_EQ(u.last_kernel_seconds_ago, 0.0) << "a time after now reads as just now";
    EXPECT_TRUE(u.on_gpu);
  }
  const DeviceUse early = SummarizeDeviceUse({{7, 0, 0, 0, 1}}, INT64_MIN, true);
  EXPECT_EQ(early.last_kernel_seconds_ago, 0.0);
}

TEST(ContainerUtilization, NvmlSamplesElseBusyTime) {
  const std::map<int32_t, double> samples{{4242, 30}, {4243, 25.5}, {9999, 40}};
  struct Case {
    const char* name;
    std::vector<int32_t> pids;
    std::optional<uint64_t> busy;
    int64_t wall;
    double want;
  };
  const Case cases[] = {
      {"sum over the container's pids", {4242, 4243}, std::nullopt, 0, 55.5},
      {"samples win over busy time", {4242}, 900'000'000, 1'000'000'000, 30},
      {"unmatched pid 0 is never a sample", {0}, 250'000'000, 1'000'000'000, 25},
      {"no sample: busy rate", {5000}, 450'000'000, 1'500'000'000, 30},
      {"no sample, no busy figure", {5000}, std::nullopt, 0, 0},
      {"no wall time", {5000}, 5, 0, 0},
      {"clamped", {4242, 4243, 9999}, std::nullopt, 0, 95.5},
      {"busy over 100 % clamped", {}, 3'000'000'000, 1'000'000'000, 100},
  };
  for (const Case& c : cases) {
    EXPECT_DOUBLE_EQ(ContainerUtilization(c.pids, samples, c.busy, c.wall), c.want) << c.name;
  }
}

TEST(RegionNames, PolicySharingAndDeviceType) {
  EXPECT_EQ(CorePolicyFromRegion(0), CorePolicy::kDefault);
  EXPECT_EQ(CorePolicyFromRegion(1), CorePolicy::kForce);
  EXPECT_EQ(CorePolicyFromRegion(2), CorePolicy::kDisable);
  EXPECT_EQ(CorePolicyFromRegion(3), CorePolicy::kMps);
  EXPECT_EQ(CorePolicyFromRegion(7), CorePolicy::kDefault);
  for (Sharing s : {Sharing::kUnknown, Sharing::kShared, Sharing::kAlone}) {
    EXPECT_EQ(SharingFromRegion(SharingToRegion(s)), s);
  }
  EXPECT_EQ(SharingToRegion(Sharing::kAlone), VGPU_SM_SHARING_ALONE);
  EXPECT_EQ(SharingFromRegion(-3), Sharing::kUnknown);
}

}  // namespace
}  // namespace vgpu::monitor
