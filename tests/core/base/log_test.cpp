#include "core/base/log.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

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
      {Format("x", {{"nl", "a\nb"}, {"tab", "a\tb"}, {"bell", "a\ab"}}),
       "msg=x nl=\"a\\nb\" tab=\"a\\tb\" bell=\"a\\u0007b\""},
      {Format("x", {{"ok", true}, {"path", "C:\\x"}}), "msg=x ok=true path=\"C:\\\\x\""},
      {Format("plain", {}), "msg=plain"},
  };
  for (const Case& c : cases) EXPECT_EQ(c.got, c.want);
}

// A logfmt reader as a log pipeline has one (Go's go-logfmt, Loki's logfmt stage): key=value pairs
// separated by spaces, values bare or double-quoted with backslash escapes. nullopt: not one
// well-formed line.
std::optional<std::map<std::string, std::string>> ParseLogfmt(const std::string& line) {
  if (line.empty() || line.back() != '\n') return std::nullopt;
  const std::string body = line.substr(0, line.size() - 1);
  if (body.find('\n') != std::string::npos) return std::nullopt;
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < body.size()) {
    const size_t eq = body.find('=', i);
    if (eq == std::string::npos || eq == i) return std::nullopt;
    const std::string key = body.substr(i, eq - i);
    if (key.find_first_of(" \"") != std::string::npos) return std::nullopt;
    i = eq + 1;
    std::string value;
    if (i < body.size() && body[i] == '"') {
      for (++i;; ++i) {
        if (i >= body.size()) return std::nullopt;  // unterminated
        if (body[i] == '"') break;
        if (body[i] != '\\') {
          value += body[i];
          continue;
        }
        if (++i >= body.size()) return std::nullopt;
        const char e = body[i];
        if (e == 'n') {
          value += '\n';
        } else if (e == 't') {
          value += '\t';
        } else if (e == 'r') {
          value += '\r';
        } else if (e == 'u') {
          if (i + 4 >= body.size()) return std::nullopt;
          value += static_cast<char>(std::stoi(body.substr(i + 1, 4), nullptr, 16));
          i += 4;
        } else {
          value += e;
        }
      }
      ++i;  // the closing quote
    } else {
      const size_t end = body.find(' ', i);
      value = body.substr(i, end == std::string::npos ? std::string::npos : end - i);
      if (value.find('"') != std::string::npos) return std::nullopt;
      i = end == std::string::npos ? body.size() : end;
    }
    if (!out.emplace(key, value).second) return std::nullopt;
    if (i < body.size()) {
      if (body[i] != ' ') return std::nullopt;
      ++i;
    }
  }
  return out;
}

TEST(Log, QuoteAndNewlineInAValueStayOneParseableLine) {
  const std::string error = "open \"/etc/x y\": no such file\nsecond line\\ end";
  const std::string line =
      FormatLine(Level::kWarn, timespec{1'764'193'201, 123'000'000}, "cannot \"start\"",
                 {{"error", error}, {"pod", "default/a"}, {"n", 3}});
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
  EXPECT_TRUE(line.starts_with("time=2025-11-26T21:40:01.123Z level=warn ")) << line;
  std::optional<std::map<std::string, std::string>> kv = ParseLogfmt(line);
  ASSERT_TRUE(kv.has_value()) << line;
  EXPECT_EQ((*kv)["level"], "warn");
  EXPECT_EQ((*kv)["msg"], "cannot \"start\"");
  EXPECT_EQ((*kv)["error"], error);
  EXPECT_EQ((*kv)["pod"], "default/a");
  EXPECT_EQ((*kv)["n"], "3");
}

std::vector<std::string>& Captured() {
  static std::vector<std::string> lines;
  return lines;
}

class LogLevels : public ::testing::Test {
 protected:
  void SetUp() override {
    Captured().clear();
    SetSink([](std::string_view line) { Captured().emplace_back(line); });
  }
  void TearDown() override {
    SetSink(nullptr);
    SetVerbosity(0);
    SetThreshold(Level::kInfo);
  }
  static std::vector<std::string> Messages() {
    std::vector<std::string> out;
    for (const std::string& line : Captured()) {
      std::optional<std::map<std::string, std::string>> kv = ParseLogfmt(line);
      out.push_back(kv ? (*kv)["level"] + " " + (*kv)["msg"] : "unparseable: " + line);
    }
    return out;
  }
  static void EveryKind() {
    Error("e");
    Warn("w");
    Info("i");
    VInfo(1, "v1");
    VInfo(2, "v2");
    VInfo(4, "v4");
  }
};

TEST_F(LogLevels, VerbosityGatesDetail) {
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

TEST_F(LogLevels, DashVAddsInformationLevelByLevel) {
  EveryKind();
  EXPECT_EQ(Messages(), (std::vector<std::string>{"error e", "warn w", "info i"}));
  Captured().clear();
  SetVerbosity(2);
  EveryKind();
  EXPECT_EQ(Messages(),
            (std::vector<std::string>{"error e", "warn w", "info i", "info v1", "info v2"}));
  Captured().clear();
  SetVerbosity(4);  // HAMi's charts: everything
  EveryKind();
  EXPECT_EQ(Messages().size(), 6u);
}

TEST_F(LogLevels, ThresholdKeepsWarningsAndErrorsWhateverTheVerbosity) {
  SetVerbosity(4);
  SetThreshold(Level::kWarn);
  EveryKind();
  EXPECT_EQ(Messages(), (std::vector<std::string>{"error e", "warn w"}));
  Captured().clear();
  SetThreshold(Level::kError);
  EveryKind();
  EXPECT_EQ(Messages(), (std::vector<std::string>{"error e"}));
}

}  // namespace
}  // namespace vgpu::log
