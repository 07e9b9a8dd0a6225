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
  };
  for (const auto& c : cases) {
    auto r = SnapshotFromJson(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.text << " -> " << r.status().message();
  }
}

}  // namespace
}  // namespace vgpu::monitor
