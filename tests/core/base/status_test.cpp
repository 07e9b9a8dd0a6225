#include "core/base/status.h"

#include <gtest/gtest.h>

namespace vgpu {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) return InvalidArgument("value must be positive, got " + std::to_string(v));
  return v;
}

Status Chain(int v) {
  VGPU_RETURN_IF_ERROR(ParsePositive(v).status());
  return Status::Ok();
}

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  const Status s = NotFound("pod default/x not found").WithContext("allocate");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NotFound: allocate: pod default/x not found");
}

TEST(Result, ValueOrStatus) {
  const Result<int> good = ParsePositive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  EXPECT_TRUE(good.status().ok());
  const Result<int> bad = ParsePositive(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Chain(2).ok());
  EXPECT_EQ(Chain(0).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vgpu
