#include "sim/apiserver/object_store.h"

#include <gtest/gtest.h>

namespace vgpu::sim {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

const ResourceInfo& Pods() {
  return *FindResource("v1", "pods");
}
const ResourceInfo& Nodes() {
  return *FindResource("v1", "nodes");
}

json Named(const std::string& name) {
  return {{"metadata", {{"name", name}}}};
}

TEST(ObjectStoreTest, ResourceVersionsAreGlobalAndMonotonic) {
  ObjectStore s;
  auto a = s.Create(Pods(), "ns", Named("a"));
  auto n = s.Create(Nodes(), "ignored", Named("n"));
  ASSERT_TRUE(a.ok() && n.ok());
  EXPECT_EQ((*a)["metadata"]["resourceVersion"], "1");
  EXPECT_EQ((*n)["metadata"]["resourceVersion"], "2");
  EXPECT_FALSE((*n)["metadata"].contains("namespace"));
  EXPECT_EQ((*a)["kind"], "Pod");
  EXPECT_NE((*a)["metadata"]["uid"], (*n)["metadata"]["uid"]);
  auto p =
      s.Patch(Pods(), "ns", "a", PatchType::kMerge, {{"metadata", {{"labels", {{"x", "1"}}}}}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)["metadata"]["resourceVersion"], "3");
  EXPECT_EQ(s.resource_version(), 3);
  EXPECT_EQ(s.List(Pods(), "").rv, 3);
  EXPECT_EQ(s.List(Pods(), "other").items.size(), 0u);
}

TEST(ObjectStoreTest, PatchesKeepIdentityAndCheckPreconditions) {
  ObjectStore s;
  auto a = s.Create(Pods(), "ns", Named("a"));
  ASSERT_TRUE(a.ok());
  // Identity fields cannot be patched away.
  auto p = s.Patch(Pods(), "ns", "a", PatchType::kMerge,
                   {{"metadata", {{"name", "b"}, {"uid", nullptr}}}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)["metadata"]["name"], "a");
  EXPECT_EQ((*p)["metadata"]["uid"], (*a)["metadata"]["uid"]);
  struct Case {
    PatchType type;
    json patch;
    StatusCode want;
  };
  const Case cases[] = {
      {PatchType::kMerge,
       {{"metadata", {{"resourceVersion", "1"}}}},
       StatusCode::kFailedPrecondition},
      {PatchType::kMerge, json::array(), StatusCode::kInvalidArgument},
      {PatchType::kJson, json::object(), StatusCode::kInvalidArgument},
      {PatchType::kJson,
       json::array({{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", "1"}}}),
       StatusCode::kFailedPrecondition},
      {PatchType::kJson, json::array({{{"op", "remove"}, {"path", "/spec/missing"}}}),
       StatusCode::kInvalidArgument},
      {PatchType::kJson, json::array({{{"op", "explode"}, {"path", "/x"}}}),
       StatusCode::kInvalidArgument},
      {PatchType::kJson, json::array({{{"op", "replace"}, {"path", "/metadata"}, {"value", 1}}}),
       StatusCode::kInvalidArgument},
  };
  for (const auto& c : cases) {
    auto r = s.Patch(Pods(), "ns", "a", c.type, c.patch);
    ASSERT_FALSE(r.ok()) << c.patch.dump();
    EXPECT_EQ(r.status().code(), c.want) << c.patch.dump() << " -> " << r.status().ToString();
  }
  // Failed patches change nothing.
  EXPECT_EQ((*s.Get(Pods(), "ns", "a"))["metadata"]["resourceVersion"],
            (*p)["metadata"]["resourceVersion"]);
  // JSON pointer escaping: "~1" is "/", "~0" is "~".
  auto esc = s.Patch(
      Pods(), "ns", "a", PatchType::kJson,
      json::array(
          {{{"op", "add"}, {"path", "/metadata/annotations"}, {"value", json::object()}},
           {{"op", "add"}, {"path", "/metadata/annotations/hami.io~1x~0y"}, {"value", "v"}}}));
  ASSERT_TRUE(esc.ok()) << esc.status().ToString();
  EXPECT_EQ((*esc)["metadata"]["annotations"]["hami.io/x~y"], "v");
}

TEST(ObjectStoreTest, WatchHistoryAndGone) {
  ObjectStore s(/*history_limit=*/3);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(s.Create(Nodes(), "", Named("n" + std::to_string(i))).ok());
  // History holds rv 3..5; resuming after rv 2 is still complete, after rv 1 is not.
  auto from2 = s.WaitEvents(Nodes(), "", 2, milliseconds(0));
  EXPECT_FALSE(from2.gone);
  ASSERT_EQ(from2.events.size(), 3u);
  EXPECT_EQ(from2.events[0].rv, 3);
  EXPECT_EQ(from2.next_rv, 5);
  EXPECT_TRUE(s.WaitEvents(Nodes(), "", 1, milliseconds(0)).gone);
  // Other resources' events advance the resume point but are not delivered.
  ASSERT_TRUE(s.Create(Pods(), "ns", Named("p")).ok());
  auto nodes_only = s.WaitEvents(Nodes(), "", 5, milliseconds(0));
  EXPECT_TRUE(nodes_only.events.empty());
  EXPECT_EQ(nodes_only.next_rv, 6);
  ASSERT_TRUE(s.Delete(Pods(), "ns", "p").ok());
  auto del = s.WaitEvents(Pods(), "ns", 6, milliseconds(0));
  ASSERT_EQ(del.events.size(), 1u);
  EXPECT_EQ(del.events[0].type, "DELETED");
  EXPECT_EQ((*del.events[0].object)["metadata"]["resourceVersion"], "7");
  s.CompactHistory();
  EXPECT_TRUE(s.WaitEvents(Pods(), "", 6, milliseconds(0)).gone);
  EXPECT_FALSE(s.WaitEvents(Pods(), "", 7, milliseconds(0)).gone);
}

TEST(ObjectStoreTest, BindOnceAndGenerateName) {
  ObjectStore s;
  ASSERT_TRUE(s.Create(Pods(), "ns", Named("p")).ok());
  ASSERT_TRUE(s.Bind("ns", "p", "node-1").ok());
  EXPECT_EQ((*s.Get(Pods(), "ns", "p"))["spec"]["nodeName"], "node-1");
  EXPECT_EQ(s.Bind("ns", "p", "node-2").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.Bind("ns", "p", "").status().code(), StatusCode::kInvalidArgument);
  auto g1 = s.Create(Pods(), "ns", {{"metadata", {{"generateName", "job-"}}}});
  auto g2 = s.Create(Pods(), "ns", {{"metadata", {{"generateName", "job-"}}}});
  ASSERT_TRUE(g1.ok() && g2.ok());
  EXPECT_NE((*g1)["metadata"]["name"], (*g2)["metadata"]["name"]);
  EXPECT_EQ(s.Create(Pods(), "ns", json::object()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Create(Pods(), "", Named("x")).status().code(), StatusCode::kInvalidArgument);
  json wrong_ns = {{"metadata", {{"name", "x"}, {"namespace", "b"}}}};
  EXPECT_EQ(s.Create(Pods(), "a", wrong_ns).status().code(), StatusCode::kInvalidArgument);
}

TEST(ObjectStoreTest, ThousandsOfPodsListedByNamespaceAndField) {
  ObjectStore s;
  for (int i = 0; i < 3000; ++i) {
    json pod = Named("p" + std::to_string(i));
    pod["spec"]["nodeName"] = "node-" + std::to_string(i % 100);
    ASSERT_TRUE(s.Create(Pods(), i % 2 ? "odd" : "even", pod).ok());
  }
  EXPECT_EQ(s.List(Pods(), "odd").items.size(), 1500u);
  EXPECT_EQ(s.List(Pods(), "").items.size(), 3000u);
  auto on_node7 =
      s.List(Pods(), "", [](const json& p) { return p["spec"]["nodeName"] == "node-7"; });
  EXPECT_EQ(on_node7.items.size(), 30u);
}

}  // namespace
}  // namespace vgpu::sim
