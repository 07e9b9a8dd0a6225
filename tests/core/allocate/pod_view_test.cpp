#include "core/allocate/pod_view.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vgpu::allocate {
namespace {

TEST(PodViewFromJson, ExtractsMetadataPhaseAndContainersInitFirst) {
  auto pod = nlohmann::json::parse(R"({
    "metadata": {"name": "p", "namespace": "ns", "uid": "u-1",
                 "annotations": {"hami.io/bind-phase": "allocating", "n": 3}},
    "spec": {"nodeName": "node-a",
             "containers": [{"name": "app", "env": [{"name": "A", "value": "1"},
                                                    {"name": "B", "valueFrom": {}}]}],
             "initContainers": [{"name": "init"}]},
    "status": {"phase": "Pending"}})");
  auto view = PodViewFromJson(pod);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->ns, "ns");
  EXPECT_EQ(view->name, "p");
  EXPECT_EQ(view->uid, "u-1");
  EXPECT_EQ(view->phase, "Pending");
  EXPECT_EQ(view->node_name, "node-a");
  EXPECT_EQ(view->annotations.size(), 1u);  // the non-string value is skipped
  ASSERT_EQ(view->containers.size(), 2u);
  EXPECT_EQ(view->containers[0].name, "init");
  EXPECT_TRUE(view->containers[0].init);
  EXPECT_EQ(view->containers[1].name, "app");
  EXPECT_FALSE(view->containers[1].init);
  EXPECT_EQ(view->containers[1].env, (std::map<std::string, std::string>{{"A", "1"}}));
}

TEST(PodViewFromJson, RejectsObjectsThatAreNotPods) {
  for (const char* text : {R"([])", R"({})", R"({"metadata": {"name": "x"}})",
                           R"({"metadata": {"namespace": "x"}})", R"({"metadata": 3})"}) {
    auto view = PodViewFromJson(nlohmann::json::parse(text));
    EXPECT_FALSE(view.ok()) << text;
    EXPECT_EQ(view.status().code(), StatusCode::kInvalidArgument) << text;
  }
}

}  // namespace
}  // namespace vgpu::allocate
