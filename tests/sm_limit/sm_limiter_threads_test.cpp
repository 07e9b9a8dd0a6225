// The limiter's launch path under several application threads at once: fast windows (launches
// that go past the full path) are per thread, their counts are folded in by whichever thread
// locks the device next, and a thread's full pass ends every other thread's window. Whatever the
// interleaving, every launch is counted exactly once. Built with the tsan preset, this is also the
// data-race check of that hand-off. The limiter is process-wide state (settings read once), so
// this is a binary of its own.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include "instant_sm_gpu.h"
#include "sm_limit.h"

namespace {

class SmLimiterThreadsTest : public ::testing::Test {
 protected:
  // 100 ns of GPU time per measured interval: the budget never binds at 50 %.
  static void SetUpTestSuite() { vgpu::sm::instant_gpu::InitLimiter(50); }

  static VgpuSmStats Stats() {
    VgpuSmStats stats{};
    EXPECT_EQ(vgpu_sm_get_stats(0, &stats), 0);
    return stats;
  }

  // `threads` threads launch `per_thread` times each; `stream_of(i)` is thread i's stream and
  // `ptsz` whether it launches through a per-thread-stream entry point. With `syncer`, one more
  // thread synchronises all the while (every synchronisation locks the device and ends the
  // launching threads' fast windows).
  template <typename StreamOf>
  static void LaunchFromThreads(int threads, int per_thread, StreamOf stream_of, int ptsz,
                                bool syncer_too = true) {
    std::atomic<bool> done{false};
    std::thread syncer([&] {
      while (syncer_too && !done.load()) {
        vgpu_sm_before_sync();
        std::this_thread::yield();
      }
    });
    std::vector<std::thread> launchers;
    launchers.reserve(threads);
    for (int i = 0; i < threads; ++i) {
      launchers.emplace_back([i, per_thread, ptsz, &stream_of] {
        CUstream stream = stream_of(i);
        for (int n = 0; n < per_thread; ++n) {
          vgpu_sm_before_launch(stream, ptsz);
          vgpu_sm_after_launch(stream, ptsz, CUDA_SUCCESS);
        }
      });
    }
    for (std::thread& t : launchers) {
      t.join();
    }
    done = true;
    syncer.join();
  }
};

constexpr int kThreads = 4;
constexpr int kPerThread = 20'000;

// Stream handles are opaque to the limiter: the addresses of these stand in for them.
std::array<char, kThreads + 2> g_streams{};
CUstream StreamNumber(int i) {
  return reinterpret_cast<CUstream>(&g_streams.at(static_cast<size_t>(i)));
}

TEST_F(SmLimiterThreadsTest, EveryLaunchCountedOnceWithAStreamPerThread) {
  const VgpuSmStats before = Stats();
  LaunchFromThreads(
      kThreads, kPerThread, [](int i) { return StreamNumber(i); }, 0);
  const VgpuSmStats after = Stats();
  EXPECT_EQ(after.launches - before.launches, uint64_t{kThreads} * kPerThread);
  EXPECT_GT(after.fast_launches, before.fast_launches);
  EXPECT_LE(after.fast_launches - before.fast_launches, after.launches - before.launches);
}

TEST_F(SmLimiterThreadsTest, EveryLaunchCountedOnceWithOneSharedStream) {
  const VgpuSmStats before = Stats();
  LaunchFromThreads(
      kThreads, kPerThread, [](int /*i*/) { return StreamNumber(kThreads); }, 0);
  const VgpuSmStats after = Stats();
  EXPECT_EQ(after.launches - before.launches, uint64_t{kThreads} * kPerThread);
  EXPECT_LE(after.fast_launches - before.fast_launches, after.launches - before.launches);
}

TEST_F(SmLimiterThreadsTest, EveryLaunchCountedOnceOnPerThreadDefaultStreams) {
  const VgpuSmStats before = Stats();
  LaunchFromThreads(
      kThreads, kPerThread, [](int /*i*/) { return CUstream{nullptr}; }, 1);
  const VgpuSmStats after = Stats();
  EXPECT_EQ(after.launches - before.launches, uint64_t{kThreads} * kPerThread);
  EXPECT_GT(after.fast_launches, before.fast_launches);
}

// One thread alone: nearly every launch of a launch-bound loop goes past the full path.
TEST_F(SmLimiterThreadsTest, ASingleThreadMostlyTakesTheFastPass) {
  const VgpuSmStats before = Stats();
  LaunchFromThreads(
      1, kPerThread, [](int /*i*/) { return StreamNumber(kThreads + 1); }, 0,
      /*syncer_too=*/false);
  const VgpuSmStats after = Stats();
  EXPECT_EQ(after.launches - before.launches, uint64_t{kPerThread});
  EXPECT_GT(after.fast_launches - before.fast_launches, uint64_t{kPerThread} / 2);
}

}  // namespace
