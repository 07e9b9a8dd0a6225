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
      // Line breaks are skipped (Go's decoder does; kubeconfigs fold certificates), nothing else.
      {"Zm9v\nYmFy\r\n", "foobar", nullptr},
      {"Zm9v YmFy", "", "not a multiple of 4"},
      {"Zm9v\tYmF", "", "character 4"},
      {"Zm9v_-8=", "", "character 4"},  // the URL-safe alphabet is another encoding
      {"Zm9v", "foo", nullptr},
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

TEST(Base64Encode, TableAndRoundTrip) {
  struct Case {
    std::string bytes;
    std::string_view want;
  };
  const Case cases[] = {
      {"", ""},
      {"f", "Zg=="},
      {"fo", "Zm8="},
      {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="},
      {"fooba", "Zm9vYmE="},
      {"foobar", "Zm9vYmFy"},
      {std::string("\0\xff\0", 3), "AP8A"},
      {"\xfb\xff\xbf", "+/+/"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.want));
    EXPECT_EQ(Base64Encode(c.bytes), c.want);
    auto back = Base64Decode(Base64Encode(c.bytes));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, c.bytes);
  }
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  auto back = Base64Decode(Base64Encode(all));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, all);
}

}  // namespace
}  // namespace vgpu::codec
