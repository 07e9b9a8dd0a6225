#include "core/sched/cluster_objects.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vgpu::sched {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

json NodeWith(json annotations) {
  return {{"metadata", {{"name", "n1"}, {"resourceVersion", "7"}, {"annotations", annotations}}}};
}

TEST(ReadNode, BothInventoryFormats) {
  const std::string json_inv =
      R"([{"id":"GPU-a","index":0,"count":10,"devmem":24000,"devcore":100,"type":"NVIDIA-A10","numa":1,"mode":"hami-core","health":true}])";
  const std::string text_inv = "GPU-a,10,24000,100,NVIDIA-A10,1,true,0,hami-core:";
  for (const std::string& inv : {json_inv, text_inv}) {
    NodeState s = ReadNode(NodeWith({{"hami.io/node-nvidia-register", inv},
                                     {"hami.io/device-cordon", "GPU-x, GPU-y"},
                                     {"hami.io/mutex.lock", "2024-01-01T00:00:00Z,ns,p"}}));
    EXPECT_EQ(s.name, "n1");
    EXPECT_EQ(s.resource_version, "7");
    EXPECT_TRUE(s.inventory_error.empty()) << s.inventory_error;
    ASSERT_EQ(s.view.gpus.size(), 1u) << inv;
    const GpuDevice& g = s.view.gpus[0];
    EXPECT_EQ(g.uuid, "GPU-a");
    EXPECT_EQ(g.slots, 10);
    EXPECT_EQ(g.mem_mib, 24000);
    EXPECT_EQ(g.numa, 1);
    EXPECT_TRUE(g.healthy);
    EXPECT_EQ(s.view.cordoned, (std::set<std::string>{"GPU-x", "GPU-y"}));
    EXPECT_EQ(s.lock_value, "2024-01-01T00:00:00Z,ns,p");
  }
}

TEST(ReadNode, GarbageIsReportedNotFatal) {
  struct Case {
    const char* name;
    json node;
    const char* want;
  };
  const Case cases[] = {
      {"no inventory", NodeWith(json::object()), "is missing"},
      {"garbage inventory", NodeWith({{"hami.io/node-nvidia-register", "[{oops"}}), "unreadable"},
      {"text garbage", NodeWith({{"hami.io/node-nvidia-register", "a,b,c:"}}), "unreadable"},
      {"not even an object", json(42), "is missing"},
  };
  for (const Case& c : cases) {
    NodeState s = ReadNode(c.node);
    EXPECT_NE(s.inventory_error.find(c.want), std::string::npos)
        << c.name << ": " << s.inventory_error;
    EXPECT_EQ(s.inventory_error.rfind("NodeUnregistered", 0), 0u);
  }
  NodeState bad_scores = ReadNode(
      NodeWith({{"hami.io/node-nvidia-score", "{]"}, {"hami.io/node-handshake", "garbage"}}));
  EXPECT_TRUE(bad_scores.view.pair_scores.empty());
  EXPECT_FALSE(bad_scores.handshake.has_value());
}

TEST(ReadNode, PairScores) {
  Result<PairScores> p = ParsePairScores(R"([{"uuid":"GPU-a","score":{"GPU-b":600,"GPU-c":100}}])");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->at("GPU-a").at("GPU-b"), 600);
  EXPECT_FALSE(ParsePairScores(R"([{"uuid":"GPU-a","score":{"GPU-b":"x"}}])").ok());
  EXPECT_FALSE(ParsePairScores("{}").ok());
}

TEST(NodeAlive, HandshakeStates) {
  const auto now = std::chrono::system_clock::time_point(
                       std::chrono::sys_days{std::chrono::year{2024} / 5 / 1}) +
                   12h;
  struct Case {
    const char* handshake;  // nullptr = absent
    bool alive;
  };
  const Case cases[] = {
      {nullptr, true},
      {"Reported 2024-05-01 11:00:00.123 +0000 UTC", true},
      {"Requesting_2024-05-01 11:59:30", true},
      {"Requesting_2024-05-01 11:58:00", false},
      {"Deleted_2024-05-01 11:59:59", false},
  };
  for (const Case& c : cases) {
    json annos = json::object();
    if (c.handshake) annos["hami.io/node-handshake"] = c.handshake;
    NodeState s = ReadNode(NodeWith(annos));
    EXPECT_EQ(NodeAlive(s, now, 60s), c.alive) << (c.handshake ? c.handshake : "absent");
  }
}

TEST(ReadPod, PlacementAndPhases) {
  json pod = {{"metadata",
               {{"uid", "u1"},
                {"namespace", "ns"},
                {"name", "p"},
                {"annotations",
                 {{"hami.io/vgpu-node", "n1"},
                  {"hami.io/bind-phase", "allocating"},
                  {"hami.io/vgpu-devices-allocated", ";GPU-a,NVIDIA,3000,30:;"}}}}},
              {"spec", {{"initContainers", {{{"name", "i"}}}}, {"containers", {{{"name", "c"}}}}}},
              {"status", {{"phase", "Pending"}}}};
  PodState s = ReadPod(pod);
  EXPECT_EQ(s.node, "n1");
  ASSERT_TRUE(s.allocation.has_value());
  EXPECT_EQ(s.allocation->init_count, 1u);
  EXPECT_TRUE(s.allocation->containers[0].empty());
  EXPECT_EQ(s.allocation->containers[1], (std::vector<AllocatedDevice>{{"GPU-a", 3000, 30}}));
  EXPECT_TRUE(s.HoldsDevices());
  EXPECT_EQ(EncodeAllocation(*s.allocation), ";GPU-a,NVIDIA,3000,30:;");

  json done = pod;
  done["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(ReadPod(done).HoldsDevices());
  json failed_bind = pod;
  failed_bind["metadata"]["annotations"]["hami.io/bind-phase"] = "failed";
  EXPECT_FALSE(ReadPod(failed_bind).HoldsDevices());
  json garbage = pod;
  garbage["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"] = "GPU-a,NVIDIA";
  PodState g = ReadPod(garbage);
  EXPECT_FALSE(g.HoldsDevices());
  EXPECT_NE(g.allocation_error.find("unreadable"), std::string::npos);
}

TEST(ReadPod, WhatPreemptionWeighs) {
  json pod = {{"metadata",
               {{"uid", "u1"},
                {"name", "p"},
                {"creationTimestamp", "2026-12-01T00:00:00Z"},
                {"labels", {{"app", "db"}, {"odd", 3}}}}},
              {"spec", {{"priority", 1000}}},
              {"status", {{"startTime", "2026-12-01T00:00:05Z"}, {"nominatedNodeName", "n2"}}}};
  PodState s = ReadPod(pod);
  EXPECT_EQ(s.nominated_node, "n2");
  EXPECT_EQ(s.priority, 1000);
  EXPECT_EQ(s.start_time, "2026-12-01T00:00:05Z");
  EXPECT_EQ(s.labels, (std::map<std::string, std::string>{{"app", "db"}}));
  json pending = pod;
  pending["status"].erase("startTime");
  pending["spec"].erase("priority");
  PodState p = ReadPod(pending);
  EXPECT_EQ(p.priority, 0);  // no priority class: kube-scheduler counts it as 0
  EXPECT_EQ(p.start_time, "2026-12-01T00:00:00Z");
}

}  // namespace
}  // namespace vgpu::sched
