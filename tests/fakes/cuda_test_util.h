#pragma once

// Helpers for tests that drive the fake libcuda directly (the test links it).

#include <cuda.h>
#include <gtest/gtest.h>

#include "test_env.h"

// Entry points the driver exports that cuda.h only declares for the driver's own build.
extern "C" {
CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                             unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                             CUstream hStream, void** kernelParams, void** extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
                                        unsigned int gz, unsigned int bx, unsigned int by,
                                        unsigned int bz, unsigned int shmem, CUstream hStream,
                                        void** kernelParams);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
}

namespace vgpu::fake::test {

// Initializes the driver and makes device `ordinal`'s primary context current for one test;
// releases it afterwards, which frees everything the test left in it.
class PrimaryContextTest : public ::testing::Test {
 protected:
  explicit PrimaryContextTest(int ordinal = 0) : ordinal_(ordinal) {}
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGet(&dev_, ordinal_), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, dev_), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  }
  void TearDown() override {
    cuCtxSetCurrent(nullptr);
    if (ctx_ != nullptr) {
      EXPECT_EQ(cuDevicePrimaryCtxRelease(dev_), CUDA_SUCCESS);
    }
  }
  size_t FreeMemory() {
    size_t free = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
    return free;
  }

  int ordinal_;
  CUdevice dev_ = -1;
  CUcontext ctx_ = nullptr;
};

}  // namespace vgpu::fake::test
