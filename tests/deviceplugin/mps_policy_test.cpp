#include "deviceplugin/mps_policy.h"

#include <gtest/gtest.h>

namespace vgpu::deviceplugin {
namespace {
using namespace std::chrono_literals;
using Clock = MpsDaemonState::Clock;

TEST(MpsRestartDelay, ImmediateThenDoublingUpToTheCap) {
  const MpsBackoff b{1000ms, 8000ms, 30000ms};
  const std::pair<int, std::chrono::milliseconds> cases[] = {{0, 0ms},    {1, 0ms},     {2, 1000ms},
                                                             {3, 2000ms}, {4, 4000ms},  {5, 8000ms},
                                                             {6, 8000ms}, {100, 8000ms}};
  for (auto [failures, want] : cases) {
    EXPECT_EQ(MpsRestartDelay(failures, b), want) << failures;
  }
}

// A day in the life of one GPU's daemon: start, crash, immediate restart, repeated crashes with
// back-off, a refused start, recovery, and the failure count starting over once it stays up.
TEST(MpsDaemonState, LifecycleTable) {
  const MpsBackoff b{1000ms, 4000ms, 10000ms};
  const Clock::time_point t0{};
  struct Step {
    const char* what;
    enum { kStart, kCheck } kind;
    bool ok;  // start succeeded / daemon answered
    std::chrono::milliseconds at;
    bool want_changed;
    bool want_healthy;
    int want_failures;
    std::chrono::milliseconds want_next_start;  // meaningful while down
  };
  const Step steps[] = {
      {"first start", Step::kStart, true, 0ms, true, true, 0, 0ms},
      {"answers", Step::kCheck, true, 5000ms, false, true, 0, 0ms},
      {"crash", Step::kCheck, false, 6000ms, true, false, 1, 6000ms},  // restart at once
      {"restarted", Step::kStart, true, 6000ms, true, true, 1, 6000ms},
      {"crash again", Step::kCheck, false, 7000ms, true, false, 2, 8000ms},
      {"restart refused", Step::kStart, false, 8000ms, false, false, 3, 10000ms},
      {"restart refused again", Step::kStart, false, 10000ms, false, false, 4, 14000ms},
      {"back", Step::kStart, true, 14000ms, true, true, 4, 14000ms},
      {"up, not yet stable", Step::kCheck, true, 20000ms, false, true, 4, 14000ms},
      {"stable: count starts over", Step::kCheck, true, 24000ms, false, true, 0, 14000ms},
      {"crash after stable", Step::kCheck, false, 30000ms, true, false, 1, 30000ms},
  };
  MpsDaemonState s;
  EXPECT_FALSE(s.healthy());  // not offered before its daemon first answers
  EXPECT_TRUE(MpsStartDue(s, t0));
  for (const Step& st : steps) {
    const Clock::time_point now = t0 + st.at;
    const bool changed =
        st.kind == Step::kStart ? MpsOnStart(s, st.ok, now, b) : MpsOnCheck(s, st.ok, now, b);
    EXPECT_EQ(changed, st.want_changed) << st.what;
    EXPECT_EQ(s.healthy(), st.want_healthy) << st.what;
    EXPECT_EQ(s.failures, st.want_failures) << st.what;
    if (!s.up) {
      EXPECT_EQ(s.next_start, t0 + st.want_next_start) << st.what;
      EXPECT_FALSE(MpsStartDue(s, t0 + st.want_next_start - 1ms)) << st.what;
      EXPECT_TRUE(MpsStartDue(s, t0 + st.want_next_start)) << st.what;
    } else {
      EXPECT_FALSE(MpsStartDue(s, now)) << st.what;
    }
  }
}

// A check of a daemon that is down changes nothing: only a start brings it back.
TEST(MpsDaemonState, CheckWhileDownIsIgnored) {
  MpsDaemonState s;
  EXPECT_FALSE(MpsOnCheck(s, true, Clock::time_point{}, MpsBackoff{}));
  EXPECT_FALSE(s.healthy());
}

}  // namespace
}  // namespace vgpu::deviceplugin
