#include "core/codec/pair_scores.h"

#include <gtest/gtest.h>

namespace vgpu::codec {
namespace {

struct EncodeCase {
  const char* name;
  DevicePairScores scores;
  const char* want;
};

TEST(EncodePairScores, WritesWhatHamisJsonMarshalWrites) {
  const EncodeCase cases[] = {
      // HAMi's own strings (pkg/device/nvidia/device_test.go, pkg/device/devices_test.go).
      {"hami two gpus",
       {{"GPU-0", {{"GPU-1", 100}}}, {"GPU-1", {{"GPU-0", 100}}}},
       R"([{"uuid":"GPU-0","score":{"GPU-1":100}},{"uuid":"GPU-1","score":{"GPU-0":100}}])"},
      {"hami one entry",
       {{"GPU-0", {{"GPU-1", 50}, {"GPU-2", 20}, {"GPU-3", 20}}}},
       R"([{"uuid":"GPU-0","score":{"GPU-1":50,"GPU-2":20,"GPU-3":20}}])"},
      {"no gpus", {}, "[]"},
      {"one gpu: empty score left out", {{"GPU-0", {}}}, R"([{"uuid":"GPU-0"}])"},
      {"empty uuid left out", {{"", {{"GPU-1", 10}}}}, R"([{"score":{"GPU-1":10}}])"},
      {"keys in byte order",
       {{"b", {{"GPU-b", 1}, {"GPU-B", 2}, {"GPU-a", 3}}}},
       R"([{"uuid":"b","score":{"GPU-B":2,"GPU-a":3,"GPU-b":1}}])"},
      {"zero and negative kept",
       {{"a", {{"b", 0}, {"c", -5}}}},
       R"([{"uuid":"a","score":{"b":0,"c":-5}}])"},
      {"go's html-safe escaping",
       {{"a<b>&\"\\\n\x01", {{"\xe2\x80\xa8", 1}}}},
       R"([{"uuid":"a\u003cb\u003e\u0026\"\\\n\u0001","score":{"\u2028":1}}])"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(EncodePairScores(c.scores), c.want) << c.name;
  }
}

struct DecodeCase {
  const char* name;
  const char* text;
  bool ok;
  DevicePairScores want;
};

TEST(DecodePairScores, AcceptsWhatGosJsonUnmarshalAccepts) {
  const DecodeCase cases[] = {
      {"hami two gpus",
       R"([{"uuid":"GPU-0","score":{"GPU-1":100}},{"uuid":"GPU-1","score":{"GPU-0":100}}])",
       true,
       {{"GPU-0", {{"GPU-1", 100}}}, {"GPU-1", {{"GPU-0", 100}}}}},
      {"hami one entry",
       R"([{"uuid":"GPU-0","score":{"GPU-1":50,"GPU-2":20,"GPU-3":20}}])",
       true,
       {{"GPU-0", {{"GPU-1", 50}, {"GPU-2", 20}, {"GPU-3", 20}}}}},
      {"hami's invalid example", "not-valid-json", false, {}},
      {"null is no entries", "null", true, {}},
      {"empty array", " [ ] ", true, {}},
      {"entry without score", R"([{"uuid":"GPU-0"}])", true, {{"GPU-0", {}}}},
      {"null entry and null fields", R"([null,{"uuid":null,"score":null}])", true, {{}, {}}},
      {"field names in any case", R"([{"UUID":"a","Score":{"b":1}}])", true, {{"a", {{"b", 1}}}}},
      {"last member naming a field wins", R"([{"uuid":"a","UUID":"b"}])", true, {{"b", {}}}},
      {"unknown fields ignored",
       R"([{"uuid":"a","id":"x","score":{"b":2},"more":[1]}])",
       true,
       {{"a", {{"b", 2}}}}},
      {"large integers",
       R"([{"uuid":"a","score":{"b":9223372036854775807,"c":-3}}])",
       true,
       {{"a", {{"b", INT64_MAX}, {"c", -3}}}}},
      {"not an array", R"({"uuid":"a"})", false, {}},
      {"entry not an object", R"(["a"])", false, {}},
      {"uuid not a string", R"([{"uuid":1}])", false, {}},
      {"score not an object", R"([{"uuid":"a","score":[1]}])", false, {}},
      {"fractional score", R"([{"uuid":"a","score":{"b":1.5}}])", false, {}},
      {"exponent score", R"([{"uuid":"a","score":{"b":1e2}}])", false, {}},
      {"string score", R"([{"uuid":"a","score":{"b":"100"}}])", false, {}},
      {"score beyond int64", R"([{"uuid":"a","score":{"b":9223372036854775808}}])", false, {}},
      {"trailing garbage", R"([]x)", false, {}},
      {"empty text", "", false, {}},
  };
  for (const auto& c : cases) {
    Result<DevicePairScores> got = DecodePairScores(c.text);
    ASSERT_EQ(got.ok(), c.ok) << c.name << ": " << (got.ok() ? "" : got.status().ToString());
    if (c.ok) {
      EXPECT_EQ(*got, c.want) << c.name;
    }
  }
}

TEST(PairScores, RoundTrip) {
  const DevicePairScores scores = {{"GPU-a", {{"GPU-b", 420}, {"GPU-c", 10}}},
                                   {"GPU-b", {{"GPU-a", 420}, {"GPU-c", 10}}},
                                   {"GPU-c", {{"GPU-a", 10}, {"GPU-b", 10}}}};
  Result<DevicePairScores> back = DecodePairScores(EncodePairScores(scores));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, scores);
}

}  // namespace
}  // namespace vgpu::codec
