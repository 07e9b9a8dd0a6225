#include "core/codec/quantity.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

TEST(QuantityTest, ValuesTable) {
  struct Case {
    const char* text;
    int64_t value;
    int64_t mib;
  };
  const Case cases[] = {
      {"3000", 3000, 3000},
      {"0", 0, 0},
      {"3Gi", 3LL << 30, 3072},
      {"1.5Gi", 1610612736, 1536},
      {"500M", 500000000, 500000000},  // decimal suffix: a count of MiB, as HAMi reads it
      {"1Mi", 1 << 20, 1},
      {"1Ki", 1024, 1},
      {"1.5k", 1500, 1500},
      {"3k", 3000, 3000},  // how kube-apiserver stores gpumem: 3000
      {"100m", 1, 1},
      {"1e3", 1000, 1000},  // exponent form is decimal too
      {"+7", 7, 7},
      {"2E", 2000000000000000000, 2000000000000000000},
  };
  for (const auto& c : cases) {
    auto v = ParseQuantity(c.text);
    ASSERT_TRUE(v.ok()) << c.text << ": " << v.status().ToString();
    EXPECT_EQ(*v, c.value) << c.text;
    auto m = ParseMemoryMiB(c.text);
    ASSERT_TRUE(m.ok()) << c.text;
    EXPECT_EQ(*m, c.mib) << c.text;
  }
}

TEST(QuantityTest, Rejects) {
  for (const char* bad : {"", "Gi", "-1", "3 Gi", "3GB", "1.2.3", "10E", "99999999999Ei", "1e"}) {
    auto v = ParseQuantity(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.status().message().find("quantity"), std::string::npos);
  }
}

}  // namespace
}  // namespace vgpu::codec
