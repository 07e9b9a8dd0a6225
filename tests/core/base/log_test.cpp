#include "core/base/log.h"

#include <gtest/gtest.h>

namespace vgpu::log {
namespace {

TEST(Log, FieldsAreKeyValueWithLogfmtQuoting) {
  struct Case {
    std::string got;
    std::string want;
  };
  const Case cases[] = {
      {Format("bind", {{"pod", "default/a"}, {"node", "n1"}}), "msg=bind pod=default/a node=n1"},
      {Format("bind failed", {{"error", "node n1 is full"}}),
       "msg=\"bind failed\" error=\"node n1 is full\""},
      {Format("x", {{"v", "a=b"}, {"q", "say \"hi\""}}), "msg=x v=\"a=b\" q=\"say \\\"hi\\\"\""},
      {Format("x", {{"empty", ""}, {"n", 42}, {"neg", -3}}), "msg=x empty=\"\" n=42 neg=-3"},
      {Format("x", {{"nl", "a\nb"}}), "msg=x nl=\"a\\nb\""},
      {Format("plain", {}), "msg=plain"},
  };
  for (const Case& c : cases) EXPECT_EQ(c.got, c.want);
}

TEST(Log, VerbosityGatesDetail) {
  SetVerbosity(0);
  EXPECT_TRUE(V(0));
  EXPECT_FALSE(V(2));
  SetVerbosity(4);
  EXPECT_TRUE(V(2));
  EXPECT_FALSE(V(5));
  SetVerbosity(-1);
  EXPECT_TRUE(V(0));
  EXPECT_FALSE(V(1));
}

}  // namespace
}  // namespace vgpu::log
