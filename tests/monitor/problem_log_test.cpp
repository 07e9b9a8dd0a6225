#include "monitor/problem_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace vgpu::monitor {
namespace {

using std::chrono::seconds;

class ProblemLogTest : public ::testing::Test {
 protected:
  ProblemLog log_{[this](log::Level, const std::string& line) { lines_.push_back(line); },
                  [this] { return now_; }};
  std::vector<std::string> lines_;
  std::chrono::steady_clock::time_point now_{};
};

TEST_F(ProblemLogTest, LogsAProblemWhenItAppearsOrChanges) {
  log_.Report("k", "a");
  log_.Report("k", "a");
  log_.Report("k", "b");
  log_.Resolve("k");
  log_.Report("k", "b");
  EXPECT_EQ(lines_, (std::vector<std::string>{"a", "b", "b"}));
}

// A container whose files change every tick cannot flood the node's log: a few lines a minute per
// folder, one line saying the rest is not logged, one line counting them once the minute is over.
// Another folder, and the node's own problems, are not held back.
TEST_F(ProblemLogTest, EachSourceGetsAFewLinesAMinute) {
  for (int tick = 0; tick < 100; ++tick) {
    log_.Report("file:evil/" + std::to_string(tick % 4), "scribble " + std::to_string(tick),
                "evil");
  }
  ASSERT_EQ(lines_.size(), static_cast<size_t>(ProblemLog::kLinesPerSource) + 1);
  EXPECT_TRUE(lines_.back().starts_with("evil: more than 5 problems a minute")) << lines_.back();
  log_.Report("file:good/r.cache", "truncated", "good");
  log_.Report("nvml", "NVML: gone");
  EXPECT_EQ(lines_[lines_.size() - 2], "truncated");
  EXPECT_EQ(lines_.back(), "NVML: gone");
  now_ += seconds(61);
  log_.Report("file:evil/0", "scribble again", "evil");
  ASSERT_GE(lines_.size(), 2u);
  EXPECT_EQ(lines_[lines_.size() - 2], "evil: 95 more problem lines were not logged");
  EXPECT_EQ(lines_.back(), "scribble again");
}

}  // namespace
}  // namespace vgpu::monitor
