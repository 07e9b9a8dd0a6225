#include "core/monitor/snapshot_json.h"

#include <gtest/gtest.h>

namespace vgpu::monitor {
namespace {

NodeSnapshot Sample() {
  NodeSnapshot s;
  s.node = "n1";
  s.time_unix_ms = 1764064800123;
  GpuView& g = s.gpus.emplace_back();
  g.index = 1;
  g.uuid = "GPU-00000000-0000-0000-0000-000000000001";
  g.type = "NVIDIA-H100";
  g.memory_total_bytes = 85899345920ULL;
  g.memory_used_bytes = 1ULL << 30;
  g.utilization_percent = 42.5;
  ContainerGpuView& c = g.containers.emplace_back();
  c.namespace_name = "default";
  c.pod = "train";
  c.pod_uid = "u-1";
  c.container = "main";
  c.vdevice_index = 0;
  c.memory_used_bytes = 3ULL << 29;
  c.memory_limit_bytes = 3000ULL << 20;
  c.memory_buffer_bytes = 1ULL << 29;
  c.memory_context_bytes = 1ULL << 30;
  c.sm_limit_percent = 30;
  c.utilization_percent = 29.5;
  c.sharing = Sharing::kShared;
  c.policy = CorePolicy::kForce;
  c.last_kernel_seconds_ago = 0.25;
  c.processes.push_back({7, 40007, 3ULL << 29});
  return s;
}

TEST(SnapshotJson, RoundTripsEveryField) {
  const NodeSnapshot s = Sample();
  auto back = SnapshotFromJson(SnapshotToJson(s));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(SnapshotToJson(*back), SnapshotToJson(s));
  const ContainerGpuView& c = back->gpus.at(0).containers.at(0);
  EXPECT_EQ(c.sharing, Sharing::kShared);
  EXPECT_EQ(c.policy, CorePolicy::kForce);
  EXPECT_EQ(c.processes.at(0).host_pid, 40007);
  EXPECT_FALSE(back->gpus[0].memory_utilization_percent.has_value());
  EXPECT_EQ(back->gpus[0].utilization_percent, 42.5);
  EXPECT_FALSE(c.no_memory);
  NodeSnapshot none = s;
  none.gpus[0].containers[0].memory_limit_bytes = 0;
  none.gpus[0].containers[0].no_memory = true;
  auto zero = SnapshotFromJson(SnapshotToJson(none));
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_TRUE(zero->gpus[0].containers[0].no_memory);
  EXPECT_NE(SnapshotToJson(none).find(R"("no_memory":true)"), std::string::npos);
}

TEST(SnapshotJson, ContainerStatesRoundTrip) {
  NodeSnapshot s = Sample();
  s.containers.push_back({"default", "train", "u-1", "main", ContainerState::kOk, 1, ""});
  s.containers.push_back(
      {"", "", "u-2", "side", ContainerState::kUnusable, 0, "r.cache: corrupt: device_count"});
  s.containers.push_back({"", "", "u-3", "c", ContainerState::kOverLimits, 4, "folder holds"});
  s.containers.push_back({"", "", "u-4", "c", ContainerState::kPending, 0, "r.cache: empty"});
  const std::string text = SnapshotToJson(s);
  EXPECT_NE(text.find(R"("state":"over_limits")"), std::string::npos) << text;
  auto back = SnapshotFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(SnapshotToJson(*back), text);
  ASSERT_EQ(back->containers.size(), 4u);
  EXPECT_EQ(back->containers[1].state, ContainerState::kUnusable);
  EXPECT_EQ(back->containers[1].problem, "r.cache: corrupt: device_count");
  EXPECT_EQ(back->containers[2].regions, 4);
  EXPECT_EQ(back->containers[3].state, ContainerState::kPending);
  // A monitor from before the states: no "containers", still read.
  auto old = SnapshotFromJson(R"({"node": "n", "gpus": []})");
  ASSERT_TRUE(old.ok());
  EXPECT_TRUE(old->containers.empty());
}

// Text that came from a container (a GPU UUID a tenant wrote into its region) is no reason to fail
// the whole answer for every container: bytes that are not UTF-8 are replaced.
TEST(SnapshotJson, BytesThatAreNotUtf8DoNotFailTheAnswer) {
  NodeSnapshot s = Sample();
  s.gpus[0].uuid = "GPU-\xff\xfe\"\n}";
  s.containers.push_back({"", "", "u-2", "c\xc3", ContainerState::kUnusable, 0, "\x80"});
  std::string text;
  EXPECT_NO_THROW(text = SnapshotToJson(s));
  auto back = SnapshotFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->gpus[0].uuid, "GPU-\xef\xbf\xbd\xef\xbf\xbd\"\n}");
}

TEST(SnapshotJson, BadInputNamesTheField) {
  const struct {
    const char* text;
    const char* want;
  } cases[] = {
      {"nope", "snapshot is not valid JSON"},
      {"[]", "snapshot is not an object"},
      {R"({"node": 3})", "snapshot.node is not a string"},
      {R"({"gpus": {}})", "snapshot.gpus is not an array"},
      {R"({"gpus": [{"containers": [{"sharing": "sometimes"}]}]})",
       "snapshot.gpus[0].containers[0].sharing is not one of the known names"},
      {R"({"gpus": [{"containers": [{"processes": [{"pid": "1"}]}]}]})",
       "snapshot.gpus[0].containers[0].processes[0].pid is not a number"},
      {R"({"containers": [{"state": "fine"}]})",
       "snapshot.containers[0].state is not one of the known names"},
  };
  for (const auto& c : cases) {
    auto r = SnapshotFromJson(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.text << " -> " << r.status().message();
  }
}

// `vgpu top` reads the snapshot from a listener: a number out of its field's range is refused by
// name, not converted (a float too large for int64_t was undefined behaviour, found by
// fuzz_snapshot_json), and a document too deep is refused before it is built.
TEST(SnapshotJson, NumbersOutOfRangeAndDeepDocumentsAreRefused) {
  const struct {
    std::string text;
    const char* error;
  } cases[] = {
      {R"({"node":"n","time_unix_ms":18446744073709551616,"gpus":[]})",
       "snapshot.time_unix_ms is not a whole number"},
      {R"({"node":"n","time_unix_ms":9223372036854775808,"gpus":[]})",
       "snapshot.time_unix_ms is not a number in range"},
      {R"({"node":"n","gpus":[{"index":2147483648}]})",
       "snapshot.gpus[0].index is not a number in range"},
      {R"({"node":"n","gpus":[{"memory_total_bytes":-1}]})",
       "snapshot.gpus[0].memory_total_bytes is not a number in range"},
      {R"({"node":"n","gpus":[{"index":1.5}]})", "snapshot.gpus[0].index is not a whole number"},
      {R"({"node":"n","gpus":)" + std::string(200, '[') + std::string(200, ']') + "}",
       "snapshot nests arrays and objects deeper than 128 levels"},
  };
  for (const auto& c : cases) {
    auto r = SnapshotFromJson(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.error), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace vgpu::monitor
