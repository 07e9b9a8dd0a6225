// Time slicing of one simulated GPU between contexts of this process and of other processes, seen
// through the driver: kernel records (the fake-only export), NVML utilization, launches that block.
// The exact rules are tested in gpu_scheduler_test.cpp; here, assertions either follow from the
// simulated timeline alone (kernels queued behind others) or allow for a slow host.

#include <cuda.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "child_process.h"
#include "cuda_test_util.h"
#include "kernel_records_util.h"
#include "nvml_api.h"
#include "sim_clock.h"
#include "test_env.h"

namespace vgpu::fake::test {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSliceNs = 2 * kMs;        // VGPU_FAKE_TIMESLICE_US default
constexpr int64_t kHostSlackNs = 100 * kMs;  // host stalls on a loaded 2-core machine

class Child : public ChildProcess {
 public:
  explicit Child(std::vector<std::string> args, std::vector<std::string> extra_env = {})
      : ChildProcess(FAKE_DRIVER_CHILD, std::move(args), std::move(extra_env)) {}
};

class TimeSlicingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &dev1_), NVML_SUCCESS);
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (auto& [ctx, fn] : contexts_) {
      EXPECT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
      EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
      EXPECT_EQ(cuCtxDestroy(ctx), CUDA_SUCCESS);
    }
    EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  }
  // A new context on GPU 1: its own queue, time-sliced against every other context.
  CUcontext NewContext() {
    CUcontext ctx = nullptr;
    CUmodule m = nullptr;
    CUfunction f = nullptr;
    EXPECT_EQ(cuCtxCreate_v2(&ctx, 0, 1), CUDA_SUCCESS);
    EXPECT_EQ(cuModuleLoadData(&m, "x"), CUDA_SUCCESS);
    EXPECT_EQ(cuModuleGetFunction(&f, m, "k"), CUDA_SUCCESS);
    contexts_.emplace_back(ctx, f);
    return ctx;
  }
  void Launch(CUcontext ctx, uint64_t ns) {
    ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    void* params[] = {&ns};
    CUfunction f = nullptr;
    for (auto& [c, fn] : contexts_) {
      if (c == ctx) f = fn;
    }
    ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  }
  void Synchronize(CUcontext ctx) {
    ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  }
  // Records by context id, in creation order of the contexts.
  static std::vector<VgpuFakeKernelRecord> ByContext(std::vector<VgpuFakeKernelRecord> r) {
    std::sort(r.begin(), r.end(),
              [](const auto& a, const auto& b) { return a.context_id < b.context_id; });
    return r;
  }
  static int64_t Span(const VgpuFakeKernelRecord& r) {
    return static_cast<int64_t>(r.end_ns - r.start_ns);
  }
  // Each process's percentage of GPU 1's time since `since_us` (NVML's wall-clock microseconds).
  std::map<unsigned, unsigned> SmUtil(unsigned long long since_us) {
    nvmlProcessUtilizationSample_t samples[16]{};
    unsigned n = 16;
    EXPECT_EQ(nvmlDeviceGetProcessUtilization(dev1_, samples, &n, since_us), NVML_SUCCESS);
    std::map<unsigned, unsigned> out;
    for (unsigned i = 0; i < n; ++i) out[samples[i].pid] = samples[i].smUtil;
    return out;
  }

  nvmlDevice_t dev1_ = nullptr;
  std::vector<std::pair<CUcontext, CUfunction>> contexts_;
};

TEST_F(TimeSlicingTest, TwoSaturatingProcessesGetHalfTheGpuEach) {
  Child a({"saturate", "1", "500"});
  Child b({"saturate", "1", "500"});
  ASSERT_EQ(a.ReadLine(), "ready 0");
  ASSERT_EQ(b.ReadLine(), "ready 0");
  // Both keep their queues deep from here on: the split is the scheduler's alone.
  const unsigned long long since = static_cast<unsigned long long>(RealtimeUs());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto util = SmUtil(since);
  ASSERT_TRUE(util.count(a.pid()) && util.count(b.pid()));
  EXPECT_NEAR(util[a.pid()], 50.0, 3.0);
  EXPECT_NEAR(util[b.pid()], 50.0, 3.0);
  nvmlUtilization_t device{};
  ASSERT_EQ(nvmlDeviceGetUtilizationRates(dev1_, &device), NVML_SUCCESS);
  EXPECT_GE(device.gpu, 97u);
}

TEST_F(TimeSlicingTest, AKernelOfAnotherProcessWaitsAtMostForTheEndOfItsSlice) {
  Child child({"launch", "1", "500"});  // queues 500 ms on GPU 1 and answers at once
  ASSERT_EQ(child.ReadLine(), "ready 0");
  CUcontext ctx = NewContext();
  RecordReader reader;
  const int64_t before = NowNs();
  Launch(ctx, 1 * kMs);
  Synchronize(ctx);
  const auto r = reader.Take();
  ASSERT_EQ(r.size(), 1u);
  // It ran at the end of the child's slice (not after its 500 ms kernel), in a slice of its own.
  EXPECT_LT(static_cast<int64_t>(r[0].start_ns) - before, kSliceNs + kHostSlackNs);
  EXPECT_EQ(Span(r[0]), 1 * kMs);
  EXPECT_EQ(r[0].service_ns, static_cast<unsigned long long>(1 * kMs));
}

TEST_F(TimeSlicingTest, AnIdleProcessDoesNotHoldTheGpu) {
  Child child({"busy", "1", "5"});  // ran a kernel, synchronized, now has nothing queued
  ASSERT_EQ(child.ReadLine(), "ready 0");
  CUcontext ctx = NewContext();
  RecordReader reader;
  const int64_t before = NowNs();
  Launch(ctx, 20 * kMs);
  const int64_t after = NowNs();
  Synchronize(ctx);
  const auto r = reader.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_GE(static_cast<int64_t>(r[0].start_ns), before);  // started as it was submitted
  EXPECT_LE(static_cast<int64_t>(r[0].start_ns), after);
  EXPECT_EQ(Span(r[0]), 20 * kMs);
}

TEST_F(TimeSlicingTest, AContextWithAnEmptyQueueYieldsAtOnce) {
  // 1 s slices: without the yield, B's kernel would wait for the end of A's slice.
  Child child({"yield", "100", "10"},
              {"VGPU_FAKE_TIMESLICE_US=1000000", "VGPU_FAKE_STATE_DIR=" + StateDir() + "/yield"});
  std::istringstream out(child.ReadLine());
  int rc = -1;
  long long a_start = 0, a_end = 0, b_start = 0, b_end = 0;
  out >> rc >> a_start >> a_end >> b_start >> b_end;
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(a_end - a_start, 100 * kMs);
  EXPECT_EQ(b_start, a_end);
  EXPECT_EQ(b_end - b_start, 10 * kMs);
}

TEST_F(TimeSlicingTest, APreemptedKernelsRecordSpansTheOtherContextsSlice) {
  CUcontext a = NewContext();
  CUcontext b = NewContext();
  RecordReader reader;
  Launch(a, 100 * kMs);
  Launch(b, 1 * kMs);  // within A's kernel: runs at the next end of A's slice
  Synchronize(a);
  Synchronize(b);
  const auto r = ByContext(reader.Take());
  ASSERT_EQ(r.size(), 2u);
  const auto& l = r[0];
  const auto& k = r[1];
  EXPECT_EQ(l.service_ns, static_cast<unsigned long long>(100 * kMs));
  EXPECT_EQ(Span(l), 101 * kMs);  // its own 100 ms and B's 1 ms
  EXPECT_EQ(Span(k), 1 * kMs);
  EXPECT_LT(l.start_ns, k.start_ns);
  EXPECT_LT(k.end_ns, l.end_ns);
  EXPECT_EQ((k.start_ns - l.start_ns) % kSliceNs, 0u);  // at a slice boundary of A
}

TEST_F(TimeSlicingTest, ThreeContextsRoundRobin) {
  CUcontext c[3] = {NewContext(), NewContext(), NewContext()};
  RecordReader reader;
  for (CUcontext ctx : c) Launch(ctx, 40 * kMs);
  for (CUcontext ctx : c) Synchronize(ctx);
  const auto r = ByContext(reader.Take());
  ASSERT_EQ(r.size(), 3u);
  for (const auto& x : r) EXPECT_EQ(x.service_ns, static_cast<unsigned long long>(40 * kMs));
  // No idle time and no switch cost: the three kernels take exactly their sum.
  EXPECT_EQ(static_cast<int64_t>(r[2].end_ns - r[0].start_ns), 120 * kMs);
  // Taking turns, all three are stretched over the whole run and finish within a round or so
  // of each other, in turn order (one after the other, they would finish 40 ms apart).
  for (const auto& x : r) {
    for (const auto& y : r) EXPECT_LT(x.start_ns, y.end_ns);
    EXPECT_EQ((x.start_ns - r[0].start_ns) % kSliceNs, 0u);
  }
  EXPECT_LT(r[0].end_ns, r[1].end_ns);
  EXPECT_LT(r[1].end_ns, r[2].end_ns);
  EXPECT_LT(static_cast<int64_t>(r[2].end_ns - r[0].end_ns), 20 * kMs);
}

TEST_F(TimeSlicingTest, ALaunchIntoAFullQueueBlocksUntilAKernelCompletes) {
  Child child({"fill", "0", "300"}, {"VGPU_FAKE_STATE_DIR=" + StateDir() + "/fill"});
  std::istringstream out(child.ReadLine());
  int rc = -1;
  long long fill_us = 0, extra_us = 0;
  out >> rc >> fill_us >> extra_us;
  ASSERT_EQ(rc, 0);
  ASSERT_LT(fill_us, 300'000) << "the host was too slow to fill the queue within one kernel";
  // The first kernel started at the first launch: the extra launch returned when it completed.
  EXPECT_GE(extra_us, 300'000);
  EXPECT_LT(extra_us, 300'000 + kHostSlackNs / 1000 * 2);
}

TEST_F(TimeSlicingTest, ASigkilledProcessWithADeepQueueFreesTheGpu) {
  Child child({"saturate", "1", "500"});
  ASSERT_EQ(child.ReadLine(), "ready 0");
  CUcontext ctx = NewContext();
  RecordReader reader;
  Launch(ctx, 20 * kMs);
  Synchronize(ctx);
  auto shared = reader.Take();
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_GE(Span(shared[0]), 30 * kMs);  // slices alternate with the child's: about 40 ms

  child.Kill();  // seconds of kernels still queued
  // Callers look for dead processes every 2 ms of their calls: after a pause, the next launch
  // drops the dead queue before its own kernel is queued.
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Launch(ctx, 20 * kMs);
  Synchronize(ctx);
  auto alone = reader.Take();
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].service_ns, static_cast<unsigned long long>(20 * kMs));
  EXPECT_EQ(Span(alone[0]), 20 * kMs);
}

}  // namespace
}  // namespace vgpu::fake::test
