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
      {"1n", 1, 1},
      {"1.00000000000000000000000000000Gi", 1LL << 30, 1024},  // trailing zeros are no digits
      {"0.00000000000000000000000000001e-30", 1, 1},           // 10^-59, rounded up
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

// Found by fuzz_quantity: 27 or 30 digits times a large suffix overflowed the 128-bit product
// (undefined behaviour) before the range check.
TEST(QuantityTest, HugeMantissaTimesSuffixIsTooLarge) {
  for (const char* huge :
       {"14444944444444444444444440E", "999999999999999999999999999999Ei",
        "999999999999999999999999999999e30", "123456789012345678901234567890E"}) {
    auto v = ParseQuantity(huge);
    ASSERT_FALSE(v.ok()) << huge;
    EXPECT_NE(v.status().message().find("too large"), std::string::npos) << v.status().message();
    EXPECT_FALSE(ParseMemoryMiB(huge).ok()) << huge;
  }
}

TEST(QuantityTest, Rejects) {
  for (const char* bad : {"", "Gi", "-1", "3 Gi", "3GB", "1.2.3", "10E", "99999999999Ei", "1e"}) {
    auto v = ParseQuantity(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.status().message().find("quantity"), std::string::npos);
  }
}

// Kubernetes accepts only whole numbers for extended resources; the pod's vGPU resources are read
// with Fraction::kRefuse so that "0.5" GPUs or "1500m" cores are refused instead of rounded up.
TEST(QuantityTest, WholeNumbersOnlyWhenAsked) {
  struct Case {
    const char* text;
    bool whole;   // the quantity's value is a whole number
    int64_t mib;  // ParseMemoryMiB with kRefuse, when whole
  };
  const Case cases[] = {
      {"3", true, 3},        {"1.5k", true, 1500},
      {"3000m", true, 3},    {"0.5Ki", true, 1},
      {"1.5Gi", true, 1536}, {"1e3", true, 1000},
      {"0", true, 0},        {"1.000", true, 1},
      {"0.5", false, 0},     {"1500m", false, 0},
      {"1n", false, 0},      {"0.1Ki", false, 0},
      {"1e-1", false, 0},    {"0.00000000000000000000000000001e-30", false, 0},
  };
  for (const Case& c : cases) {
    auto v = ParseQuantity(c.text, Fraction::kRefuse);
    auto m = ParseMemoryMiB(c.text, Fraction::kRefuse);
    EXPECT_EQ(v.ok(), c.whole) << c.text;
    EXPECT_EQ(m.ok(), c.whole) << c.text;
    EXPECT_TRUE(ParseQuantity(c.text).ok()) << c.text << ": rounding up stays the default";
    if (!c.whole) {
      EXPECT_NE(v.status().message().find("is not a whole number"), std::string::npos)
          << v.status().message();
    } else if (m.ok()) {
      EXPECT_EQ(*m, c.mib) << c.text;
    }
  }
}

}  // namespace
}  // namespace vgpu::codec
