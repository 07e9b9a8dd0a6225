#include "core/codec/node_inventory.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

DeviceInfo H100(int index) {
  return {"GPU-" + std::to_string(index), index,     10,          81559, 100,
          "NVIDIA-NVIDIA H100 80GB HBM3", index / 4, "hami-core", true};
}

TEST(NodeInventoryTest, JsonRoundTrip) {
  NodeInventory inv{H100(0), H100(5)};
  inv[1].health = false;
  std::string text = EncodeInventoryJson(inv);
  EXPECT_EQ(text.front(), '[');
  auto back = DecodeInventory(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, inv);
}

TEST(NodeInventoryTest, JsonOmittedZeroFieldsAndUnknownKeys) {
  auto inv = DecodeInventory(
      R"( [{"id":"GPU-a","count":4,"devmem":1000,"devcore":100,"type":"NVIDIA-T4","health":true,
            "customInfo":{"x":1}}])");
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  ASSERT_EQ(inv->size(), 1u);
  EXPECT_EQ((*inv)[0], (DeviceInfo{"GPU-a", 0, 4, 1000, 100, "NVIDIA-T4", 0, "", true}));
}

TEST(NodeInventoryTest, TextForms) {
  struct Case {
    const char* text;
    NodeInventory want;
  };
  const Case cases[] = {
      {"", {}},
      {"GPU-a,10,1000,100,NVIDIA-T4,0,true:",
       {{"GPU-a", 0, 10, 1000, 100, "NVIDIA-T4", 0, "", true}}},
      {"GPU-a,10,1000,100,NVIDIA-T4,0,true,0,hami-core:GPU-b,5,2000,200,NVIDIA-A100,1,false,1,mig:",
       {{"GPU-a", 0, 10, 1000, 100, "NVIDIA-T4", 0, "hami-core", true},
        {"GPU-b", 1, 5, 2000, 200, "NVIDIA-A100", 1, "mig", false}}},
  };
  for (const auto& c : cases) {
    auto inv = DecodeInventory(c.text);
    ASSERT_TRUE(inv.ok()) << c.text << ": " << inv.status().ToString();
    EXPECT_EQ(*inv, c.want) << c.text;
  }
  // Writers: 9-field by default, 7-field on request, both read back.
  NodeInventory inv{H100(1)};
  EXPECT_EQ(EncodeInventoryText(inv),
            "GPU-1,10,81559,100,NVIDIA-NVIDIA H100 80GB HBM3,0,true,1,hami-core:");
  EXPECT_EQ(EncodeInventoryText(inv, false),
            "GPU-1,10,81559,100,NVIDIA-NVIDIA H100 80GB HBM3,0,true:");
  EXPECT_EQ(*DecodeInventory(EncodeInventory(inv, InventoryFormat::kLegacyText)), inv);
  EXPECT_EQ(*DecodeInventory(EncodeInventory(inv, InventoryFormat::kJson)), inv);
}

TEST(NodeInventoryTest, NvidiaDeviceTypeIsPrefixedOnlyWhenTheNameLacksNvidia) {
  EXPECT_EQ(NvidiaDeviceType("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(NvidiaDeviceType("NVIDIA A10"), "NVIDIA A10");
  EXPECT_EQ(NvidiaDeviceType("Tesla T4"), "NVIDIA-Tesla T4");
  EXPECT_EQ(NvidiaDeviceType("Quadro RTX 6000"), "NVIDIA-Quadro RTX 6000");
  EXPECT_EQ(NvidiaDeviceType("nvidia lowercase"), "NVIDIA-nvidia lowercase");  // case-sensitive
}

TEST(NodeInventoryTest, RejectsBadInput) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"[{\"id\":\"GPU-a\",\"count\":\"10\"}]", "field \"count\" must be an integer"},
      {"[{\"id\":\"GPU-a\",\"health\":1}]", "field \"health\" must be true or false"},
      {"[{\"count\":1}]", "has no \"id\""},
      {"[{\"id\":\"GPU-a\"}", "not valid JSON"},
      {"{}", "does not end with ':'"},
      {"[1]", "not a JSON object"},
      {"GPU-a,10,1000,100,T4,0,true", "does not end with ':'"},
      {"GPU-a,10,1000,100,T4,0,true,1:", "want 7 or 9"},
      {"GPU-a,ten,1000,100,T4,0,true:", "count \"ten\" is not an integer"},
      {"GPU-a,10,1000,100,T4,0,yes:", "health \"yes\""},
  };
  for (const auto& c : cases) {
    auto inv = DecodeInventory(c.text);
    ASSERT_FALSE(inv.ok()) << c.text;
    EXPECT_NE(inv.status().message().find(c.want), std::string::npos)
        << c.text << " -> " << inv.status().message();
  }
}

}  // namespace
}  // namespace vgpu::codec
