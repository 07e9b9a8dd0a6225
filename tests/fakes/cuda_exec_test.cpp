// Streams, events, kernel timing and graphs on the simulated timeline. Durations are encoded
// in the first kernel parameter; assertions use the simulated clock (event differences), with
// generous upper bounds only where host scheduling could add time.

#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "cuda_test_util.h"

namespace vgpu::fake::test {
namespace {

constexpr float kSlackMs = 200.0f;  // host stalls on a loaded 2-core CI machine
// A kernel queued first so that what follows is queued behind it: events recorded after it are
// stamped with simulated times, independent of host speed, as long as the host queues the rest
// within this time.
constexpr uint64_t kLeadNs = 300'000'000;

class ExecTest : public PrimaryContextTest {
 protected:
  void SetUp() override {
    PrimaryContextTest::SetUp();
    ASSERT_EQ(cuModuleLoadData(&module_, "image"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&fn_, module_, "k"), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&stream_, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  }
  // Launches a kernel of `blocks` blocks taking `ns_per_wave` per wave of SMs.
  CUresult Launch(uint64_t ns_per_wave, unsigned blocks, CUstream s) {
    void* params[] = {&ns_per_wave};
    return cuLaunchKernel(fn_, blocks, 1, 1, 128, 1, 1, 0, s, params, nullptr);
  }
  float Elapsed(CUevent a, CUevent b) {
    float ms = -1;
    EXPECT_EQ(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
    return ms;
  }
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
  CUstream stream_ = nullptr;
};

TEST_F(ExecTest, KernelDurationIsNsPerWaveTimesWaves) {
  CUevent start = nullptr, end = nullptr;
  ASSERT_EQ(cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&end, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  // A long kernel first, so both events are captured behind queued work and their difference is
  // exactly the simulated duration of what lies between them.
  ASSERT_EQ(Launch(kLeadNs, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(start, stream_), CUDA_SUCCESS);
  ASSERT_EQ(Launch(1'000'000, 133, stream_), CUDA_SUCCESS);  // 2 waves on 132 SMs: 2 ms
  ASSERT_EQ(Launch(1'000'000, 132, stream_), CUDA_SUCCESS);  // 1 wave: 1 ms
  ASSERT_EQ(cuLaunchKernel(fn_, 1, 1, 1, 1, 1, 1, 0, stream_, nullptr, nullptr),
            CUDA_SUCCESS);  // 2 us
  ASSERT_EQ(cuEventRecord(end, stream_), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(stream_), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cuEventQuery(end), CUDA_ERROR_NOT_READY);
  float ms = 0;
  EXPECT_EQ(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuEventSynchronize(end), CUDA_SUCCESS);
  EXPECT_EQ(cuEventQuery(end), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(stream_), CUDA_SUCCESS);
  EXPECT_NEAR(Elapsed(start, end), 3.002f, 1e-3f);
  EXPECT_NEAR(Elapsed(end, start), -3.002f, 1e-3f);
  EXPECT_EQ(cuEventDestroy(start), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(end), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(end), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(ExecTest, SynchronizeWaitsForTheSimulatedEnd) {
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(Launch(50'000'000, 1, stream_), CUDA_SUCCESS);  // 50 ms
  const auto launched = std::chrono::steady_clock::now();
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  const auto done = std::chrono::steady_clock::now();
  EXPECT_GE(done - t0, std::chrono::milliseconds(50));  // never earlier than the kernel's end
  (void)launched;
  ASSERT_EQ(Launch(20'000'000, 1, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamQuery(nullptr), CUDA_SUCCESS);
  EXPECT_GE(std::chrono::steady_clock::now() - done, std::chrono::milliseconds(20));
}

TEST_F(ExecTest, OneKernelAtATimeAcrossStreams) {
  CUstream other = nullptr;
  ASSERT_EQ(cuStreamCreateWithPriority(&other, CU_STREAM_NON_BLOCKING, -3), CUDA_SUCCESS);
  CUevent e0 = nullptr, e1 = nullptr;
  ASSERT_EQ(cuEventCreate(&e0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&e1, 0), CUDA_SUCCESS);
  ASSERT_EQ(Launch(kLeadNs, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(e0, stream_), CUDA_SUCCESS);
  ASSERT_EQ(Launch(5'000'000, 1, other), CUDA_SUCCESS);  // waits for the device, not the stream
  ASSERT_EQ(cuEventRecord(e1, other), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(e1), CUDA_SUCCESS);
  EXPECT_NEAR(Elapsed(e0, e1), 5.0f, 1e-3f);

  // cuStreamWaitEvent orders a stream after an event.
  CUevent e2 = nullptr;
  ASSERT_EQ(cuEventCreate(&e2, 0), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100'000'000, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(e0, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(other, e0, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(e2, other), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(e2), CUDA_SUCCESS);
  EXPECT_GE(Elapsed(e0, e2), 0.0f);
  EXPECT_LT(Elapsed(e0, e2), kSlackMs);
  EXPECT_EQ(cuStreamWaitEvent(other, nullptr, 0), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(other), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(other), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamSynchronize(other), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(ExecTest, AnEventWaitsForTheLastKernelOfItsContext) {
  CUstream other = nullptr;
  ASSERT_EQ(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUevent idle = nullptr, behind = nullptr;
  ASSERT_EQ(cuEventCreate(&idle, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&behind, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(idle, other), CUDA_SUCCESS);  // nothing pending: stamped as recorded
  EXPECT_EQ(cuEventQuery(idle), CUDA_SUCCESS);
  ASSERT_EQ(Launch(kLeadNs, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(behind, other), CUDA_SUCCESS);  // another stream of the same context
  EXPECT_EQ(cuEventQuery(behind), CUDA_ERROR_NOT_READY);
  ASSERT_EQ(cuEventSynchronize(behind), CUDA_SUCCESS);
  // The lead kernel started after `idle` was stamped; `behind` is stamped with its end.
  EXPECT_GE(Elapsed(idle, behind), kLeadNs / 1e6f);
  EXPECT_LT(Elapsed(idle, behind), kLeadNs / 1e6f + kSlackMs);
  EXPECT_EQ(cuStreamDestroy(other), CUDA_SUCCESS);
}

TEST_F(ExecTest, EventsStayExactBehindMoreKernelsThanAQueueHolds) {
  CUevent a = nullptr, b = nullptr;
  ASSERT_EQ(cuEventCreate(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&b, 0), CUDA_SUCCESS);
  ASSERT_EQ(Launch(50'000'000, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(a, stream_), CUDA_SUCCESS);
  // More than the 4096 a context queues: launches block, and the lead kernel's queue entry is
  // reused long before anyone asks for `a`. The queue holds 410 ms of work when the launches
  // resume: it never drains, however slow the host.
  constexpr int kKernels = 5000;
  for (int i = 0; i < kKernels; ++i) ASSERT_EQ(Launch(100'000, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(b, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(b), CUDA_SUCCESS);
  EXPECT_NEAR(Elapsed(a, b), kKernels * 0.1f, 1e-3f);
}

TEST_F(ExecTest, EventErrors) {
  CUevent a = nullptr, b = nullptr, nt = nullptr;
  ASSERT_EQ(cuEventCreate(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&b, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&nt, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  EXPECT_EQ(cuEventCreate(&a, 0x100), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuEventQuery(a), CUDA_SUCCESS);  // never recorded: complete
  float ms = 0;
  EXPECT_EQ(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE);  // not recorded
  ASSERT_EQ(cuEventRecord(a, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(b, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(nt, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(b), CUDA_SUCCESS);
  EXPECT_EQ(cuEventElapsedTime(&ms, a, nt), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventElapsedTime(nullptr, a, b), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuEventElapsedTime_v2(&ms, a, b), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(cuEventRecord(nullptr, nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecord(a, reinterpret_cast<CUstream>(0x1234)), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(ExecTest, LaunchVariantsAndValidation) {
  CUevent a = nullptr, b = nullptr;
  ASSERT_EQ(cuEventCreate(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&b, 0), CUDA_SUCCESS);
  uint64_t ns = 1'000'000;
  void* params[] = {&ns};
  CUlaunchConfig cfg{};
  cfg.gridDimX = 264;  // 2 waves
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 256;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = stream_;
  ASSERT_EQ(Launch(kLeadNs, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(a, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernelEx(&cfg, fn_, params, nullptr), CUDA_SUCCESS);       // 2 ms
  ASSERT_EQ(cuLaunchKernelEx_ptsz(&cfg, fn_, params, nullptr), CUDA_SUCCESS);  // 2 ms
  ASSERT_EQ(cuLaunchCooperativeKernel(fn_, 132, 1, 1, 32, 1, 1, 0, stream_, params),
            CUDA_SUCCESS);  // 1
  ASSERT_EQ(cuLaunchCooperativeKernel_ptsz(fn_, 1, 1, 1, 32, 1, 1, 0, stream_, params),
            CUDA_SUCCESS);  // 1
  ASSERT_EQ(cuLaunchKernel_ptsz(fn_, 2, 1, 1, 32, 1, 1, 0, stream_, params, nullptr),
            CUDA_SUCCESS);  // 1
  ASSERT_EQ(cuEventRecord(b, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(b), CUDA_SUCCESS);
  EXPECT_NEAR(Elapsed(a, b), 7.0f, 1e-3f);

  EXPECT_EQ(cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, stream_, params, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuLaunchKernel(fn_, 0, 1, 1, 1, 1, 1, 0, stream_, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(fn_, 1, 1, 1, 2048, 1, 1, 0, stream_, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernelEx(nullptr, fn_, params, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUstream bad = reinterpret_cast<CUstream>(0x4321);
  EXPECT_EQ(cuLaunchKernel(fn_, 1, 1, 1, 1, 1, 1, 0, bad, params, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamCreate(&bad, 0x10), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ExecTest, CapturedGraphReplaysKernelDurations) {
  CUstreamCaptureStatus status{};
  ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamIsCapturing(stream_, &status), CUDA_SUCCESS);
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  ASSERT_EQ(Launch(1'000'000, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(Launch(2'000'000, 133, stream_), CUDA_SUCCESS);  // 4 ms
  EXPECT_EQ(cuStreamSynchronize(stream_), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(cuStreamBeginCapture(nullptr, CU_STREAM_CAPTURE_MODE_GLOBAL),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamQuery(stream_), CUDA_SUCCESS);  // capture queued nothing

  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  CUevent a = nullptr, b = nullptr;
  ASSERT_EQ(cuEventCreate(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&b, 0), CUDA_SUCCESS);
  ASSERT_EQ(Launch(kLeadNs, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(a, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch_ptsz(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(b, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_NEAR(Elapsed(a, b), 10.0f, 1e-3f);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphLaunch(exec, stream_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
}

TEST_F(ExecTest, BuiltGraphWithKernelAndMemoryNodes) {
  CUgraph graph = nullptr;
  ASSERT_EQ(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphCreate(&graph, 1), CUDA_ERROR_INVALID_VALUE);
  uint64_t ns = 3'000'000;
  void* params[] = {&ns};
  CUDA_KERNEL_NODE_PARAMS kp{};
  kp.func = fn_;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = params;
  CUgraphNode k = nullptr, m = nullptr;
  ASSERT_EQ(cuGraphAddKernelNode(&k, graph, nullptr, 0, &kp), CUDA_SUCCESS);  // _v2
  CUDA_MEM_ALLOC_NODE_PARAMS mp{};
  mp.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  mp.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  mp.poolProps.location.id = 0;
  mp.bytesize = 100 * kMiB;
  ASSERT_EQ(cuGraphAddMemAllocNode(&m, graph, &k, 1, &mp), CUDA_SUCCESS);
  EXPECT_NE(mp.dptr, 0u);
  const size_t before = FreeMemory();
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS);  // cuGraphInstantiateWithFlags
  EXPECT_EQ(FreeMemory(), before);  // charged at launch, not at creation

  CUevent a = nullptr, b = nullptr;
  ASSERT_EQ(cuEventCreate(&a, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&b, 0), CUDA_SUCCESS);
  ASSERT_EQ(Launch(kLeadNs, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(a, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(b, stream_), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 100 * kMiB);
  EXPECT_EQ(cuGraphLaunch(exec, stream_), CUDA_ERROR_INVALID_VALUE);  // previous one not freed
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_NEAR(Elapsed(a, b), 3.0f, 1e-3f);
  EXPECT_EQ(cuMemFree(mp.dptr), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);

  // A graph whose allocation does not fit fails at launch with OOM.
  CUgraph big = nullptr;
  ASSERT_EQ(cuGraphCreate(&big, 0), CUDA_SUCCESS);
  mp.bytesize = FreeMemory() + 1;
  ASSERT_EQ(cuGraphAddMemAllocNode(&m, big, nullptr, 0, &mp), CUDA_SUCCESS);
  CUgraphNode fnode = nullptr;
  ASSERT_EQ(cuGraphAddMemFreeNode(&fnode, big, &m, 1, mp.dptr), CUDA_SUCCESS);
  CUgraphExec big_exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&big_exec, big, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(big_exec, stream_), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuGraphExecDestroy(big_exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(big), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ExecTest, CapturedAsyncAllocationIsChargedAtLaunch) {
  const size_t before = FreeMemory();
  ASSERT_EQ(cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync(&p, 30 * kMiB, stream_), CUDA_SUCCESS);
  ASSERT_EQ(Launch(1000, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(p, stream_), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamEndCapture(stream_, &graph), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(exec, stream_), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);                        // allocated and freed within the graph
  ASSERT_EQ(cuGraphLaunch(exec, stream_), CUDA_SUCCESS);  // so it can launch again
  EXPECT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
}

}  // namespace
}  // namespace vgpu::fake::test

namespace vgpu::fake::test {
namespace {

// Many threads sharing one primary context: accounting stays exact and handles stay valid.
TEST(ExecThreads, ConcurrentAllocLaunchAndFreeKeepAccountingExact) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent(ctx), CUDA_SUCCESS);
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_before, &total), CUDA_SUCCESS);
  CUmodule m = nullptr;
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleLoadData(&m, "x"), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&f, m, "k"), CUDA_SUCCESS);

  constexpr int kThreads = 4;
  constexpr int kIterations = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS) ++failures;
      CUstream s = nullptr;
      if (cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) ++failures;
      for (int i = 0; i < kIterations; ++i) {
        CUdeviceptr p = 0;
        const size_t bytes = 4096 * static_cast<size_t>(1 + (t * kIterations + i) % 7);
        if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS) ++failures;
        if (cuLaunchKernel_ptsz(f, 1, 1, 1, 1, 1, 1, 0, (i % 2) != 0 ? s : nullptr, nullptr,
                                nullptr) != CUDA_SUCCESS) {
          ++failures;
        }
        if (cuMemFree(p) != CUDA_SUCCESS) ++failures;
      }
      if (cuStreamSynchronize(s) != CUDA_SUCCESS) ++failures;
      if (cuStreamDestroy(s) != CUDA_SUCCESS) ++failures;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  size_t free_after = 0;
  ASSERT_EQ(cuMemGetInfo(&free_after, &total), CUDA_SUCCESS);
  EXPECT_EQ(free_after, free_before);
  EXPECT_EQ(cuCtxPopCurrent(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

}  // namespace
}  // namespace vgpu::fake::test
