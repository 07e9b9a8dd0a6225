#include "core/codec/base64.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

TEST(Base64Decode, Table) {
  struct Case {
    std::string_view text;
    std::string want;  // ignored when `bad` is set
    const char* bad;   // part of the message when rejected, else nullptr
  };
  const Case cases[] = {
      {"", "", nullptr},
      {"Zg==", "f", nullptr},
      {"Zm8=", "fo", nullptr},
      {"Zm9v", "foo", nullptr},
      {"Zm9vYmFy", "foobar", nullptr},
      {"AP8A", std::string("\0\xff\0", 3), nullptr},
      {"+/+/", "\xfb\xff\xbf", nullptr},
      {"Zm9", "", "not a multiple of 4"},
      {"Zm9-", "", "character 3"},
      {"Zg==Zg==", "", "character 2"},  // padding only at the very end
      {"=g==", "", "character 0"},
      {"Z===", "", "character 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.text));
    auto got = Base64Decode(c.text);
    if (c.bad != nullptr) {
      ASSERT_FALSE(got.ok());
      EXPECT_NE(got.status().message().find(c.bad), std::string::npos) << got.status().message();
    } else {
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(*got, c.want);
    }
  }
}

}  // namespace
}  // namespace vgpu::codec
