#include "core/codec/bounded_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace vgpu::codec {
namespace {

using nlohmann::json;

std::string Nested(size_t levels, const std::string& inner = "1") {
  return std::string(levels, '[') + inner + std::string(levels, ']');
}

constexpr JsonLimits kSmall{
    .max_bytes = 1000, .max_depth = 4, .max_values = 10, .max_string_bytes = 8};

TEST(ParseJsonWithin, ParsesWhatIsWithinEveryLimit) {
  Result<json> r = ParseJsonWithin(R"({"a":[1,[2,{"b":"12345678"}]],"c":null})", kSmall, "doc");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["a"][1][1]["b"], "12345678");
  EXPECT_TRUE((*r)["c"].is_null());
  EXPECT_TRUE(ParseJsonWithin(Nested(4), kSmall, "doc").ok());
}

struct RefusedCase {
  const char* name;
  std::string text;
  StatusCode code;
  const char* message;
};

TEST(ParseJsonWithin, RefusesEachLimitByName) {
  const RefusedCase cases[] = {
      {"five levels", Nested(5), StatusCode::kResourceExhausted,
       "doc nests arrays and objects deeper than 4 levels, the limit for one document"},
      {"deep objects", R"({"a":{"b":{"c":{"d":{}}}}})", StatusCode::kResourceExhausted,
       "deeper than 4 levels"},
      {"eleven values", "[1,2,3,4,5,6,7,8,9,10]", StatusCode::kResourceExhausted,
       "doc holds more than 10 JSON values, over the limit for one document"},
      {"containers count", "[[],[],[],[],[],[],[],[],[],[]]", StatusCode::kResourceExhausted,
       "more than 10 JSON values"},
      {"long string", R"(["123456789"])", StatusCode::kResourceExhausted,
       "doc holds a string over 8 bytes"},
      {"long key", R"({"123456789":1})", StatusCode::kResourceExhausted,
       "doc holds a string over 8 bytes"},
      {"escapes count decoded", R"(["\u0041\u0041\u0041\u0041\u0041\u0041\u0041\u0041\u0041"])",
       StatusCode::kResourceExhausted, "a string over 8 bytes"},
      {"size", "[" + std::string(1000, ' ') + "]", StatusCode::kResourceExhausted,
       "doc is 1002 bytes of JSON, over the limit of 1000 bytes"},
      {"syntax", "[1,", StatusCode::kInvalidArgument,
       "doc is not valid JSON: parse error at line 1, column 4: syntax error"},
      {"trailing bytes", "[1] x", StatusCode::kInvalidArgument, "doc is not valid JSON"},
      {"empty", "", StatusCode::kInvalidArgument, "doc is not valid JSON"},
      {"huge number", "[1e99999]", StatusCode::kInvalidArgument, "doc is not valid JSON"},
  };
  for (const RefusedCase& c : cases) {
    Result<json> r = ParseJsonWithin(c.text, kSmall, "doc");
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), c.code) << c.name << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.name << ": " << r.status().message();
  }
}

// The parser's message quotes the sender's bytes: kept printable and short, so that a JSON answer
// can carry it (nlohmann's writer throws on bytes that are not UTF-8: the fuzzed webhook answered
// 500 for a body of one bad byte).
TEST(ParseJsonWithin, SyntaxErrorsArePrintableAndShort) {
  for (const std::string& text : {std::string("[\"\xff\"]"), std::string("[\"\x01\"]"),
                                  "[\"" + std::string(100'000, 'x') + "\x80\"]"}) {
    Result<json> r = ParseJsonWithin(text, kKubeObjectJson, "doc");
    ASSERT_FALSE(r.ok());
    const std::string& m = r.status().message();
    EXPECT_LT(m.size(), 400u);
    EXPECT_TRUE(std::all_of(m.begin(), m.end(), [](char c) { return c >= 0x20 && c < 0x7f; })) << m;
    const json answer = {{"error", m}};
    EXPECT_NO_THROW((void)answer.dump());
  }
}

// The AdmissionReview that overflowed the scheduler's stack (issue 42): 135,000 levels in 280 KB.
// Refused at level 129, before a DOM deeper than that exists; and quickly.
TEST(ParseJsonWithin, TheReviewThatCrashedTheSchedulerIsRefusedAtTheLimit) {
  const std::string deep = R"({"request":{"uid":"u","object":)" + Nested(135'000) + "}}";
  const auto start = std::chrono::steady_clock::now();
  Result<json> r = ParseJsonWithin(deep, kKubeObjectJson, "AdmissionReview");
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(r.status().message(),
            "AdmissionReview nests arrays and objects deeper than 128 levels, the limit for one "
            "document");
  EXPECT_LT(took, std::chrono::seconds(2));
  // The deepest allowed copies, compares and dumps (the recursive operations) fine.
  Result<json> ok = ParseJsonWithin(Nested(kMaxJsonDepth), kKubeObjectJson, "doc");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  const json copy = *ok;
  EXPECT_EQ(copy, *ok);
  EXPECT_EQ(copy.dump(), Nested(kMaxJsonDepth));
}

// A review of a pod of n empty args (object and oldObject), as the API server sends it: 3 bytes
// of text a value.
std::string DenseReview(int n) {
  std::string args = "[";
  for (int i = 0; i < n; ++i) args += i == 0 ? "\"\"" : ",\"\"";
  args += "]";
  return R"({"request":{"uid":"u","object":{"spec":{"args":)" + args +
         R"(}},"oldObject":{"spec":{"args":)" + args + "}}}}";
}

TEST(ParseJsonWithin, CountsEveryValueAndThePresetsTakeTheDensestPods) {
  const std::string review = DenseReview(1000);
  JsonLimits exact = kKubeObjectJson;
  exact.max_values = 3 + 2 * (3 + 1000);  // top, request, uid; twice object, spec, args, args[]
  EXPECT_TRUE(ParseJsonWithin(review, exact, "review").ok());
  exact.max_values -= 1;
  EXPECT_EQ(ParseJsonWithin(review, exact, "review").status().code(),
            StatusCode::kResourceExhausted);
  // The API server takes a 3 MiB pod: a million such args, twice in an update's review.
  const size_t densest_pod = (size_t{3} << 20) / 3;
  EXPECT_GE(kKubeObjectJson.max_values, 3 + 2 * (3 + densest_pod));
  EXPECT_GE(kKubeObjectJson.max_bytes,
            size_t{2} * 6 * (size_t{3} << 20));  // \u003c escapes: 6 bytes
  EXPECT_LE(kAnnotationJson.max_bytes, kKubeObjectJson.max_bytes);
}

TEST(ParseOrderedJsonWithin, KeepsDocumentOrderWithinTheSameLimits) {
  Result<nlohmann::ordered_json> r = ParseOrderedJsonWithin(R"({"b":1,"a":2})", kSmall, "doc");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->dump(), R"({"b":1,"a":2})");
  EXPECT_EQ(ParseOrderedJsonWithin(Nested(5), kSmall, "doc").status().code(),
            StatusCode::kResourceExhausted);
}

struct FindCase {
  const char* name;
  std::string text;
  std::string want;
};

TEST(FindJsonString, ReadsOnePathOfADocumentTooDeepToParse) {
  const FindCase cases[] = {
      {"uid before the depth", R"({"request":{"uid":"u1","object":)" + Nested(200'000) + "}}",
       "u1"},
      {"uid after the depth", R"({"request":{"object":)" + Nested(200'000) + R"(,"uid":"u2"}})",
       "u2"},
      {"same key deeper is not it", R"({"request":{"object":{"uid":"no"},"uid":"u3"}})", "u3"},
      {"same key at the top is not it", R"({"uid":"no","request":{"x":1}})", ""},
      {"inside an array is not it", R"([{"request":{"uid":"no"}}])", ""},
      {"request in an array is not it", R"({"request":[{"uid":"no"}]})", ""},
      {"not a string", R"({"request":{"uid":7}})", ""},
      {"after a syntax error", R"({"request":{"x":,"uid":"no"}})", ""},
      {"first of two", R"({"request":{"uid":"a"},"request":{"uid":"b"}})", "a"},
  };
  for (const FindCase& c : cases) {
    EXPECT_EQ(FindJsonString(c.text, {"request", "uid"}, size_t{1} << 30), c.want) << c.name;
  }
  EXPECT_EQ(FindJsonString(R"({"apiVersion":"v"})", {"apiVersion"}, 100), "v");
  EXPECT_EQ(FindJsonString(R"({"apiVersion":"v"})", {"apiVersion"}, 5), "");  // over max_bytes
}

}  // namespace
}  // namespace vgpu::codec
