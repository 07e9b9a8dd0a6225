// The fake-only records export (fake_kernel_records.h): one record per kernel of this process,
// with the simulated times, the launch's ids and dimensions.

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda_test_util.h"
#include "kernel_records_util.h"

namespace vgpu::fake::test {
namespace {

constexpr uint64_t kMs = 1'000'000;

// On GPU 1 (66 SMs) so that the records' device is not 0 by accident.
class KernelRecordsTest : public PrimaryContextTest {
 protected:
  KernelRecordsTest() : PrimaryContextTest(1) {}
  void SetUp() override {
    PrimaryContextTest::SetUp();
    ASSERT_EQ(cuModuleLoadData(&module_, "image"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&fn_, module_, "k"), CUDA_SUCCESS);
  }
  CUresult Launch(uint64_t ns_per_wave, unsigned blocks, CUstream s) {
    void* params[] = {&ns_per_wave};
    return cuLaunchKernel(fn_, blocks, 1, 1, 64, 2, 1, 0, s, params, nullptr);
  }
  CUmodule module_ = nullptr;
  CUfunction fn_ = nullptr;
};

TEST_F(KernelRecordsTest, OneRecordPerKernelWithItsSimulatedTimesAndIds) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUgraph graph = nullptr;
  ASSERT_EQ(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(Launch(3 * kMs, 1, stream), CUDA_SUCCESS);
  ASSERT_EQ(Launch(1 * kMs, 1, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);

  RecordReader reader;
  // A long kernel first: what follows is queued behind it, so the GPU runs it back to back
  // however slow the host is.
  ASSERT_EQ(Launch(300 * kMs, 1, stream), CUDA_SUCCESS);
  ASSERT_EQ(Launch(1 * kMs, 132, stream), CUDA_SUCCESS);  // 2 waves on 66 SMs: 2 ms
  ASSERT_EQ(Launch(1 * kMs, 1, nullptr), CUDA_SUCCESS);   // legacy stream: 1 ms
  ASSERT_EQ(cuGraphLaunch(exec, stream), CUDA_SUCCESS);   // 3 ms + 1 ms
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  auto r = reader.Take();
  ASSERT_EQ(r.size(), 5u);
  r.erase(r.begin());
  const uint64_t durations[] = {2 * kMs, 1 * kMs, 3 * kMs, 1 * kMs};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].end_ns - r[i].start_ns, durations[i]) << i;  // alone on the GPU: no stretch
    EXPECT_EQ(r[i].service_ns, durations[i]) << i;
    EXPECT_EQ(r[i].device, 1) << i;
    EXPECT_EQ(r[i].context_id, r[0].context_id) << i;
    if (i > 0) {
      EXPECT_EQ(r[i].start_ns, r[i - 1].end_ns) << i;  // one at a time, in order
    }
  }
  EXPECT_EQ(r[0].grid[0], 132u);
  EXPECT_EQ(r[0].grid[1], 1u);
  EXPECT_EQ(r[0].block[0], 64u);
  EXPECT_EQ(r[0].block[1], 2u);
  EXPECT_EQ(r[0].block[2], 1u);
  EXPECT_NE(r[0].stream_id, r[1].stream_id);  // its own stream, then the legacy stream
  EXPECT_EQ(r[2].stream_id, r[0].stream_id);
  EXPECT_EQ(r[1].correlation_id, r[0].correlation_id + 1);
  EXPECT_EQ(r[2].correlation_id, r[1].correlation_id + 1);
  EXPECT_EQ(r[3].correlation_id, r[2].correlation_id);  // one graph launch
  EXPECT_TRUE(reader.Take().empty());
  EXPECT_EQ(reader.cursor().lost, 0u);
  EXPECT_EQ(reader.cursor().next_correlation_id, r[3].correlation_id + 1);
  EXPECT_EQ(cuGraphExecDestroy(exec), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(graph), CUDA_SUCCESS);
}

TEST_F(KernelRecordsTest, KernelsCompletedBeforeTheReaderStartedAreLeftOut) {
  ASSERT_EQ(Launch(1 * kMs, 1, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  RecordReader reader;
  ASSERT_EQ(Launch(200 * kMs, 1, nullptr), CUDA_SUCCESS);
  EXPECT_TRUE(reader.Take().empty());  // not completed yet
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const auto r = reader.Take();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].service_ns, 200 * kMs);
}

TEST_F(KernelRecordsTest, RecordsOverwrittenBeforeTheyWereTakenAreCountedAsLost) {
  RecordReader reader;
  constexpr int kKernels = 9000;  // more than a GPU's record history (8192)
  for (int i = 0; i < kKernels; ++i) ASSERT_EQ(Launch(0, 1, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const auto r = reader.Take();
  EXPECT_EQ(r.size() + reader.cursor().lost, static_cast<size_t>(kKernels));
  EXPECT_GT(reader.cursor().lost, 0u);
}

TEST_F(KernelRecordsTest, NullArgumentsAreRejected) {
  VgpuFakeKernelCursor cursor{};
  VgpuFakeKernelRecord record{};
  unsigned n = 0;
  EXPECT_EQ(vgpuFakeTakeKernelRecords(nullptr, &record, 1, &n), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(vgpuFakeTakeKernelRecords(&cursor, nullptr, 1, &n), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(vgpuFakeTakeKernelRecords(&cursor, &record, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(vgpuFakeTakeKernelRecords(&cursor, nullptr, 0, &n), CUDA_SUCCESS);
}

}  // namespace
}  // namespace vgpu::fake::test
