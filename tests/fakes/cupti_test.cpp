// The fake libcupti.so.13: kernel activity records of the simulated GPUs through CUPTI's real
// API (CUDA 13 headers), as the SM limiter will consume them.

#include <cuda.h>
#include <cupti.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "child_process.h"
#include "cuda_test_util.h"
#include "cupti/clock_offset.h"
#include "cupti_test_util.h"
#include "kernel_records_util.h"
#include "sim_clock.h"

namespace vgpu::fake::test {
namespace {

constexpr uint64_t kMs = 1'000'000;

std::vector<CUpti_ActivityKernel10> ByStart(std::vector<CUpti_ActivityKernel10> r) {
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  return r;
}

// A CUPTI client on GPU 1's primary context. CUPTI's state is per process: every test ends with
// cuptiFinalize, so the next starts from scratch.
class CuptiTest : public PrimaryContextTest {
 protected:
  CuptiTest() : PrimaryContextTest(1) {}
  void SetUp() override {
    PrimaryContextTest::SetUp();
    ASSERT_EQ(cuModuleLoadData(&module_, "image"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&fn_, module_, "k"), CUDA_SUCCESS);
    client().SetBuffers(size_t{64} * 1024, 0);
    client().Clear();
  }
  void TearDown() override {
    EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_EQ(cuptiFinalize(), CUPTI_SUCCESS);
    PrimaryContextTest::TearDown();
  }
  static CuptiClient& client() { return CuptiClient::Get(); }
  // Registers the buffers and, with `monotonic`, a CLOCK_MONOTONIC timestamp callback; enables
  // `kind`.
  void Start(bool monotonic, CUpti_ActivityKind kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    if (monotonic) {
      ASSERT_EQ(cuptiActivityRegisterTimestampCallback(CuptiClient::Monotonic), CUPTI_SUCCESS);
    }
    ASSERT_EQ(client().Register(), CUPTI_SUCCESS);
    ASSERT_EQ(cuptiActivityEnable(kind), CUPTI_SUCCESS);
  }
  void Launch(uint64_t ns, CUstream s = nullptr, unsigned grid = 1) {
    void* params[] = {&ns};
    ASSERT_EQ(cuLaunchKernel(fn_, grid, 1, 1, 32, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
  }
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
};

TEST(CuptiBasics, VersionResultStringsAndRecordIteration) {
  uint32_t version = 0;
  EXPECT_EQ(cuptiGetVersion(&version), CUPTI_SUCCESS);
  EXPECT_EQ(version, static_cast<uint32_t>(CUPTI_API_VERSION));
  EXPECT_EQ(cuptiGetVersion(nullptr), CUPTI_ERROR_INVALID_PARAMETER);
  const char* s = nullptr;
  EXPECT_EQ(cuptiGetResultString(CUPTI_ERROR_INVALID_KIND, &s), CUPTI_SUCCESS);
  EXPECT_STREQ(s, "CUPTI_ERROR_INVALID_KIND");
  EXPECT_EQ(cuptiGetResultString(CUPTI_ERROR_UNKNOWN, &s), CUPTI_SUCCESS);
  EXPECT_STREQ(s, "CUPTI_ERROR_UNKNOWN");
  EXPECT_EQ(cuptiGetResultString(static_cast<CUptiResult>(4711), &s),
            CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_STREQ(s, "<unknown>");
  EXPECT_EQ(cuptiGetResultString(CUPTI_SUCCESS, nullptr), CUPTI_ERROR_INVALID_PARAMETER);

  alignas(8) uint8_t buffer[2 * sizeof(CUpti_ActivityKernel10)] = {};
  auto* first = reinterpret_cast<CUpti_ActivityKernel10*>(buffer);
  first[0].kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  first[1].kind = CUPTI_ACTIVITY_KIND_KERNEL;
  CUpti_Activity* r = nullptr;
  EXPECT_EQ(cuptiActivityGetNextRecord(buffer, sizeof buffer, &r), CUPTI_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uint8_t*>(r), buffer);
  EXPECT_EQ(cuptiActivityGetNextRecord(buffer, sizeof buffer, &r), CUPTI_SUCCESS);
  EXPECT_EQ(r->kind, CUPTI_ACTIVITY_KIND_KERNEL);
  EXPECT_EQ(cuptiActivityGetNextRecord(buffer, sizeof buffer, &r), CUPTI_ERROR_MAX_LIMIT_REACHED);
  r = nullptr;
  EXPECT_EQ(cuptiActivityGetNextRecord(buffer, 16, &r), CUPTI_ERROR_MAX_LIMIT_REACHED);  // partial
  EXPECT_EQ(cuptiActivityGetNextRecord(buffer, 0, &r), CUPTI_ERROR_MAX_LIMIT_REACHED);
  EXPECT_EQ(cuptiActivityGetNextRecord(nullptr, 0, &r), CUPTI_ERROR_INVALID_PARAMETER);
  first[0].kind = CUPTI_ACTIVITY_KIND_INVALID;
  EXPECT_EQ(cuptiActivityGetNextRecord(buffer, sizeof buffer, &r), CUPTI_ERROR_INVALID_KIND);
}

TEST(CuptiBasics, ClockOffsetIsZeroWhenTheClocksCannotBeToldApart) {
  EXPECT_EQ(cupti::ClockOffset(100, 150, 200), 0);  // read between the two: same clock
  EXPECT_EQ(cupti::ClockOffset(100, 100, 100), 0);
  EXPECT_EQ(cupti::ClockOffset(100, 1000, 200), 850);
  EXPECT_EQ(cupti::ClockOffset(1000, 100, 1100), -950);
}

TEST_F(CuptiTest, UnsupportedKindsAndMisuseAreRefused) {
  EXPECT_EQ(cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION);  // no callbacks yet
  EXPECT_EQ(cuptiActivityRegisterCallbacks(nullptr, nullptr), CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiActivityRegisterTimestampCallback(nullptr), CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_ERROR_NOT_COMPATIBLE);
  EXPECT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_INVALID), CUPTI_ERROR_INVALID_KIND);
  EXPECT_EQ(cuptiActivityEnable(static_cast<CUpti_ActivityKind>(9999)), CUPTI_ERROR_INVALID_KIND);
  EXPECT_EQ(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
  EXPECT_EQ(cuptiActivityDisable(static_cast<CUpti_ActivityKind>(9999)), CUPTI_ERROR_INVALID_KIND);
  size_t dropped = 1;
  EXPECT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, nullptr), CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);
  EXPECT_EQ(cuptiGetTimestamp(nullptr), CUPTI_ERROR_INVALID_PARAMETER);
}

TEST_F(CuptiTest, RecordsMatchTheSimulatedTimelineAndArriveOnAnotherThread) {
  Start(/*monotonic=*/true);
  RecordReader truth;  // the driver's own records, read beside CUPTI
  CUstream s[2] = {};
  ASSERT_EQ(cuStreamCreate(&s[0], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  // A long kernel first: the rest queue behind it and run back to back however slow the host.
  Launch(300 * kMs, s[0]);
  constexpr int kKernels = 6;
  for (int i = 1; i <= kKernels; ++i) Launch(i * kMs, s[i % 2], 10 + i);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);  // delivers before it returns

  const auto r = ByStart(client().Records());
  const auto t = truth.Take();
  ASSERT_EQ(r.size(), static_cast<size_t>(kKernels + 1));
  ASSERT_EQ(t.size(), r.size());
  uint32_t streams[2] = {r[2].streamId, r[1].streamId};
  EXPECT_NE(streams[0], streams[1]);
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].kind, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    // A CLOCK_MONOTONIC timestamp callback gets the simulated times exactly.
    EXPECT_EQ(r[i].start, t[i].start_ns) << i;
    EXPECT_EQ(r[i].end, t[i].end_ns) << i;
    EXPECT_EQ(r[i].deviceId, 1u);
    EXPECT_EQ(r[i].contextId, t[i].context_id);
    EXPECT_EQ(r[i].correlationId, t[i].correlation_id);
    if (i == 0) continue;
    EXPECT_EQ(r[i].end - r[i].start, i * kMs) << i;  // durations exact
    EXPECT_EQ(r[i].start, r[i - 1].end) << i;        // in order, one at a time
    EXPECT_EQ(r[i].streamId, streams[i % 2]) << i;
    EXPECT_EQ(r[i].gridX, static_cast<int32_t>(10 + i));
    EXPECT_EQ(r[i].blockX, 32);
    EXPECT_GT(r[i].correlationId, r[i - 1].correlationId);
  }
  for (const auto& b : client().Buffers()) EXPECT_NE(b.thread, std::this_thread::get_id());
  uint64_t now = 0;
  ASSERT_EQ(cuptiGetTimestamp(&now), CUPTI_SUCCESS);  // the callback's clock
  EXPECT_GE(now, r.back().end);
  EXPECT_LE(static_cast<int64_t>(now), NowNs());
}

TEST_F(CuptiTest, DefaultTimestampsAreRealtime) {
  Start(/*monotonic=*/false);
  RecordReader truth;
  Launch(5 * kMs);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  const auto r = client().Records();
  const auto t = truth.Take();
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(t.size(), 1u);
  const int64_t offset = RealtimeUs() * 1000 - NowNs();
  EXPECT_NEAR(static_cast<double>(r[0].start), static_cast<double>(t[0].start_ns + offset), 1e6);
  EXPECT_EQ(r[0].end - r[0].start, 5 * kMs);  // one offset per batch: durations stay exact
  uint64_t now = 0;
  ASSERT_EQ(cuptiGetTimestamp(&now), CUPTI_SUCCESS);
  EXPECT_NEAR(static_cast<double>(now), static_cast<double>(RealtimeUs()) * 1000, 1e8);
}

TEST_F(CuptiTest, PeriodicFlushDeliversOnlyFullBuffers) {
  client().SetBuffers(size_t{64} * 1024, 4);  // full after 4 records
  Start(/*monotonic=*/true);
  ASSERT_EQ(cuptiActivityFlushPeriod(1), CUPTI_SUCCESS);
  for (int i = 0; i < 10; ++i) Launch(1 * kMs);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  // Two buffers fill; the third, with two records, waits for an explicit flush.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (client().Buffers().size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // room for a wrong delivery
  auto buffers = client().Buffers();
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[0].records, 4u);
  EXPECT_EQ(buffers[1].records, 4u);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  buffers = client().Buffers();
  ASSERT_EQ(buffers.size(), 3u);
  EXPECT_EQ(buffers[2].records, 2u);
  for (const auto& b : buffers) EXPECT_NE(b.thread, std::this_thread::get_id());
  EXPECT_EQ(client().Records().size(), 10u);
}

TEST_F(CuptiTest, DisableStopsNewRecordsButNotThoseOfKernelsLaunchedBefore) {
  Start(/*monotonic=*/true);
  Launch(100 * kMs);  // still running when records are disabled
  ASSERT_EQ(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  Launch(2 * kMs);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  auto r = client().Records();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].end - r[0].start, 100 * kMs);

  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_SUCCESS);  // treated alike
  Launch(3 * kMs);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  r = client().Records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].kind, CUPTI_ACTIVITY_KIND_KERNEL);
  EXPECT_EQ(r[1].end - r[1].start, 3 * kMs);
}

// Detaching and attaching again (the SM limiter does it while a tenant is far below its limit):
// after cuptiFinalize the next registration starts afresh, and kernels launched while nothing
// was enabled, more than the driver's ring holds, are neither recorded nor counted as dropped.
TEST_F(CuptiTest, RegisteringAgainAfterFinalizeAttachesAfresh) {
  constexpr int kMoreThanTheRing = 9000;
  auto launch_many = [&] {
    for (int i = 0; i < kMoreThanTheRing; ++i) Launch(1000);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  };
  size_t dropped = 0;
  Start(/*monotonic=*/true);
  Launch(2 * kMs);
  ASSERT_EQ(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  launch_many();  // attached, kind off
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);
  ASSERT_EQ(client().Records().size(), 1u);
  ASSERT_EQ(cuptiFinalize(), CUPTI_SUCCESS);
  launch_many();  // detached
  ASSERT_EQ(cuptiActivityRegisterTimestampCallback(CuptiClient::Monotonic), CUPTI_SUCCESS);
  ASSERT_EQ(client().Register(), CUPTI_SUCCESS);
  launch_many();  // attached again, kind off
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  Launch(3 * kMs);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  const auto r = client().Records();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].end - r[0].start, 2 * kMs);
  EXPECT_EQ(r[1].end - r[1].start, 3 * kMs);
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);
}

TEST_F(CuptiTest, RecordsWithoutABufferAreCountedAsDropped) {
  client().SetBuffers(0, 0);  // the client declines every buffer
  Start(/*monotonic=*/true);
  for (int i = 0; i < 3; ++i) Launch(1 * kMs);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  EXPECT_TRUE(client().Records().empty());
  size_t dropped = 0;
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 3u);
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped), CUPTI_SUCCESS);
  EXPECT_EQ(dropped, 0u);  // reset by reading
}

TEST_F(CuptiTest, AForkedChildDoesNotInheritTheWorker) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // A sanitizer's allocator lock held by another thread at fork stays held in the child.
  GTEST_SKIP() << "fork of a multi-threaded process under a sanitizer";
#endif
  Start(/*monotonic=*/true);
  Launch(1 * kMs);
  const pid_t pid = fork();
  if (pid == 0) {
    // The parent's worker does not exist here: a flush starts the child's own, exit stops it.
    const CUptiResult rc = cuptiActivityFlushAll(0);
    std::exit(rc == CUPTI_SUCCESS ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  int status = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(status)) kill(pid, SIGKILL);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);  // the parent's worker goes on
  EXPECT_EQ(client().Records().size(), 1u);
}

TEST_F(CuptiTest, TwoTimeSlicedProcessesGetOverlappingStretchedRecords) {
  Start(/*monotonic=*/true);
  // The other tenant queues 400 ms of 10 ms kernels on the same GPU first.
  ChildProcess other(FAKE_CUPTI_CHILD, {"tenant", "1", "40", "10"});
  ASSERT_EQ(other.ReadLine(), "ready 0");
  for (int i = 0; i < 5; ++i) Launch(10 * kMs);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  const auto mine = ByStart(client().Records());
  ASSERT_EQ(mine.size(), 5u);

  std::istringstream head(other.ReadLine());
  std::string word;
  size_t n = 0;
  head >> word >> n;
  ASSERT_EQ(word, "records");
  ASSERT_EQ(n, 40u);
  std::vector<std::pair<uint64_t, uint64_t>> theirs;
  for (size_t i = 0; i < n; ++i) {
    std::istringstream line(other.ReadLine());
    uint64_t start = 0, end = 0;
    line >> start >> end;
    theirs.emplace_back(start, end);
  }
  for (const auto& r : mine) {
    // Slices alternate with the other tenant's: each 10 ms kernel spans about 20 ms...
    EXPECT_GE(r.end - r.start, 15 * kMs);
    // ...and overlaps the other tenant's records, stretched the same way.
    size_t overlapping = 0;
    for (const auto& [start, end] : theirs) {
      if (start < r.end && r.start < end) {
        ++overlapping;
        EXPECT_GE(end - start, 10 * kMs);
      }
    }
    EXPECT_GE(overlapping, 1u);
  }
}

}  // namespace
}  // namespace vgpu::fake::test
