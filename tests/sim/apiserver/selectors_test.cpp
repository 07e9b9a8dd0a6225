#include "sim/apiserver/selectors.h"

#include <gtest/gtest.h>

namespace vgpu::sim {
namespace {

using nlohmann::json;

TEST(SelectorTest, LabelTable) {
  json obj = {{"metadata", {{"labels", {{"app", "web"}, {"tier", "front"}, {"gpu", "on"}}}}}};
  json bare = {{"metadata", {{"name", "x"}}}};
  struct Case {
    const char* selector;
    bool obj;
    bool bare;
  };
  const Case cases[] = {
      {"", true, true},
      {"app=web", true, false},
      {"app==web", true, false},
      {"app = web", true, false},
      {"app=db", false, false},
      {"app!=db", true, true},
      {"app!=web", false, true},
      {"gpu", true, false},
      {"!gpu", false, true},
      {"app=web,tier=front", true, false},
      {"app=web,tier=back", false, false},
      {"tier in (front,back)", true, false},
      {"tier notin (front)", false, true},
      {"tier in (back, middle),app", false, false},
  };
  for (const auto& c : cases) {
    auto s = Selector::ParseLabels(c.selector);
    ASSERT_TRUE(s.ok()) << c.selector << ": " << s.status().ToString();
    EXPECT_EQ(s->Matches(obj), c.obj) << c.selector;
    EXPECT_EQ(s->Matches(bare), c.bare) << c.selector;
  }
  for (const char* bad : {"a b", "=x", "app in x", "app,,b", "(x)"}) {
    EXPECT_FALSE(Selector::ParseLabels(bad).ok()) << bad;
  }
}

TEST(SelectorTest, FieldTable) {
  json pod = {{"metadata", {{"name", "p"}, {"namespace", "default"}}},
              {"spec", {{"nodeName", "node-1"}}},
              {"status", {{"phase", "Pending"}}}};
  json unscheduled = {{"metadata", {{"name", "q"}}}, {"status", {{"phase", "Pending"}}}};
  struct Case {
    const char* selector;
    bool pod;
    bool unscheduled;
  };
  const Case cases[] = {
      {"spec.nodeName=node-1", true, false},
      {"spec.nodeName==node-1", true, false},
      {"spec.nodeName=", false, true},
      {"spec.nodeName!=", true, false},
      {"status.phase=Pending,metadata.name=q", false, true},
      {"status.phase!=Succeeded,status.phase!=Failed", true, true},
      {"metadata.namespace=default", true, false},
  };
  for (const auto& c : cases) {
    auto s = Selector::ParseFields(c.selector);
    ASSERT_TRUE(s.ok()) << c.selector;
    EXPECT_EQ(s->Matches(pod), c.pod) << c.selector;
    EXPECT_EQ(s->Matches(unscheduled), c.unscheduled) << c.selector;
  }
  EXPECT_FALSE(Selector::ParseFields("spec.nodeName").ok());
}

}  // namespace
}  // namespace vgpu::sim
