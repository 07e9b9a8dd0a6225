// The limiter's launch path under several application threads at once: fast windows (launches
// that go past the full path) are per thread, their counts are folded in by whichever thread
// locks the device next, and a thread's full pass ends every other thread's window. Whatever the
// interleaving, every launch is counted exactly once. Built with the tsan preset, this is also the
// data-race check of that hand-off. The limiter is process-wide state (settings read once), so
// this is a binary of its own.

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "sm_limit.h"

namespace {

std::atomic<int> g_events{0};
int g_event_storage[1 << 16];

CUresult CtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult DeviceGetUuid(CUuuid* uuid, CUdevice /*device*/) {
  for (int i = 0; i < 16; ++i) {
    uuid->bytes[i] = static_cast<char>(0x60 + i);
  }
  return CUDA_SUCCESS;
}
CUresult EventCreate(CUevent* event, unsigned int /*flags*/) {
  *event = reinterpret_cast<CUevent>(&g_event_storage[g_events.fetch_add(1) % (1 << 16)]);
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent /*event*/, CUstream /*stream*/) {
  return CUDA_SUCCESS;
}
CUresult EventQuery(CUevent /*event*/) {
  return CUDA_SUCCESS;  // the simulated GPU finishes everything at once
}
CUresult EventElapsed(float* ms, CUevent /*start*/, CUevent /*end*/) {
  *ms = 0.0001F;  // 100 ns of GPU time per interval: the budget never binds at 50 %
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent /*event*/) {
  return CUDA_SUCCESS;
}

class SmLimiterThreadsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static std::string dir = [] {
      char tmpl[] = "/tmp/vgpu-sm-threads-XXXXXX";
      EXPECT_NE(mkdtemp(tmpl), nullptr);
      return std::string(tmpl);
    }();
    // Read once by vgpu_sm_init, before any launching thread exists.
    setenv("CUDA_DEVICE_SM_LIMIT", "50", 1);            // NOLINT(concurrency-mt-unsafe)
    setenv("GPU_CORE_UTILIZATION_POLICY", "force", 1);  // NOLINT(concurrency-mt-unsafe)
    setenv("VGPU_SM_PEER_DIR", dir.c_str(), 1);         // NOLINT(concurrency-mt-unsafe)
    const std::string region = dir + "/region";
    setenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", region.c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
    VgpuSmDriver driver{};
    driver.ctx_get_device = CtxGetDevice;
    driver.device_get_uuid = DeviceGetUuid;
    driver.event_create = EventCreate;
    driver.event_record = EventRecord;
    driver.event_query = EventQuery;
    driver.event_elapsed_time = EventElapsed;
    driver.event_destroy = EventDestroy;
    vgpu_sm_init(&driver);
  }

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
