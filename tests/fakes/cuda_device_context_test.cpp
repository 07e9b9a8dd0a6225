// cuInit, device queries, error strings, primary and explicit contexts.

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cuda_test_util.h"

namespace vgpu::fake::test {
namespace {

class DeviceTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cuInit(0), CUDA_SUCCESS); }
};

TEST_F(DeviceTest, InitRejectsFlagsAndReportsVersion) {
  EXPECT_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  int version = 0;
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  EXPECT_EQ(cuDriverGetVersion(nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(DeviceTest, EnumeratesConfiguredGpus) {
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2);
  EXPECT_EQ(cuDeviceGetCount(nullptr), CUDA_ERROR_INVALID_VALUE);
  CUdevice dev = -1;
  EXPECT_EQ(cuDeviceGet(&dev, 1), CUDA_SUCCESS);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGet(&dev, -1), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGet(nullptr, 0), CUDA_ERROR_INVALID_VALUE);

  char name[256] = {};
  EXPECT_EQ(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
  char small[7] = {};
  EXPECT_EQ(cuDeviceGetName(small, sizeof small, 0), CUDA_SUCCESS);
  EXPECT_STREQ(small, "NVIDIA");  // truncated, still terminated
  EXPECT_EQ(cuDeviceGetName(name, sizeof name, 5), CUDA_ERROR_INVALID_DEVICE);

  size_t total = 0;
  EXPECT_EQ(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  EXPECT_EQ(total, kGpu0Memory);
  EXPECT_EQ(cuDeviceTotalMem(&total, 1), CUDA_SUCCESS);
  EXPECT_EQ(total, kGpu1Memory);
  EXPECT_EQ(cuDeviceTotalMem(nullptr, 1), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(DeviceTest, UuidBytesMatchTheConfiguredString) {
  CUuuid uuid{};
  ASSERT_EQ(cuDeviceGetUuid(&uuid, 1), CUDA_SUCCESS);  // cuDeviceGetUuid_v2
  for (int i = 0; i < 15; ++i) EXPECT_EQ(uuid.bytes[i], 0) << i;
  EXPECT_EQ(static_cast<unsigned char>(uuid.bytes[15]), 0x01);
  EXPECT_EQ(cuDeviceGetUuid(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(DeviceTest, AttributesDescribeAHopperGpu) {
  struct Case {
    CUdevice_attribute attr;
    int dev;
    int want;
  };
  const Case cases[] = {
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0, kGpu0Sms},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1, kGpu1Sms},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0, 9},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0, 0},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0, 1980000},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0, 32},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0, 2048},
      {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0, 0x18},
      {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1, 0x19},
      {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 1, 0},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0, 1},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0, 1},
      {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0, 1},
      {CU_DEVICE_ATTRIBUTE_INTEGRATED, 0, 0},
  };
  for (const auto& c : cases) {
    int v = -1;
    EXPECT_EQ(cuDeviceGetAttribute(&v, c.attr, c.dev), CUDA_SUCCESS) << c.attr;
    EXPECT_EQ(v, c.want) << "attribute " << c.attr << " device " << c.dev;
  }
  int v = 0;
  EXPECT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDeviceGetAttribute(nullptr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 9), CUDA_ERROR_INVALID_DEVICE);
  char bus[32] = {};
  EXPECT_EQ(cuDeviceGetPCIBusId(bus, sizeof bus, 1), CUDA_SUCCESS);
  EXPECT_STREQ(bus, "0000:19:00.0");
}

TEST(ErrorStrings, NameAndDescribeRealCodes) {
  const char* s = nullptr;
  EXPECT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "out of memory");
  EXPECT_EQ(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
  EXPECT_EQ(cuGetErrorString(CUDA_ERROR_UNKNOWN, &s), CUDA_SUCCESS);
  EXPECT_NE(s, nullptr);
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(123456), &s), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(cuGetErrorString(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
}

class ContextTest : public DeviceTest {
 protected:
  size_t FreeOn(CUcontext ctx) {
    EXPECT_EQ(cuCtxPushCurrent(ctx), CUDA_SUCCESS);
    size_t free = 0, total = 0;
    EXPECT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
    CUcontext popped = nullptr;
    EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    EXPECT_EQ(popped, ctx);
    return free;
  }
};

TEST_F(ContextTest, NoCurrentContextIsAnError) {
  while (true) {  // clear anything a previous test left on this thread
    CUcontext c = nullptr;
    if (cuCtxPopCurrent(&c) != CUDA_SUCCESS) break;
  }
  CUcontext cur = reinterpret_cast<CUcontext>(0x1);
  EXPECT_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, nullptr);
  CUdevice dev = -1;
  EXPECT_EQ(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 1024), CUDA_ERROR_INVALID_CONTEXT);
  size_t free = 0, total = 0;
  EXPECT_EQ(cuMemGetInfo(&free, &total), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxPopCurrent(nullptr), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(ContextTest, PrimaryContextIsRefCountedAndChargesContextMemory) {
  CUcontext a = nullptr, b = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&a, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&b, 1), CUDA_SUCCESS);
  EXPECT_EQ(a, b);
  unsigned flags = 99;
  int active = 0;
  EXPECT_EQ(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(flags, 0u);
  EXPECT_EQ(FreeOn(a), kGpu1Memory - kContextMemory);

  EXPECT_EQ(cuDevicePrimaryCtxSetFlags(1, CU_CTX_SCHED_BLOCKING_SYNC), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxSetFlags(1, 0x80000000u), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(flags, static_cast<unsigned>(CU_CTX_SCHED_BLOCKING_SYNC));

  EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);  // last reference
  EXPECT_EQ(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 0);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxPushCurrent(a), CUDA_ERROR_INVALID_CONTEXT);  // destroyed

  // Reset destroys an active primary context and its allocations.
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&a, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent(a), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 100 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxReset(1), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxGetState(1, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 0);
  EXPECT_EQ(flags, 0u);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&b, 1), CUDA_SUCCESS);
  EXPECT_EQ(FreeOn(b), kGpu1Memory - kContextMemory);  // the 100 MiB went with the reset
  EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(nullptr, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&b, 7), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(ContextTest, ExplicitContextsStackAndFreeTheirMemory) {
  CUcontext c1 = nullptr, c2 = nullptr;
  ASSERT_EQ(cuCtxCreate(&c1, nullptr, 0, 0), CUDA_SUCCESS);  // cuCtxCreate_v4
  CUcontext cur = nullptr;
  EXPECT_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, c1);  // a created context is pushed
  ASSERT_EQ(cuCtxCreate_v2(&c2, 0, 1), CUDA_SUCCESS);
  CUdevice dev = -1;
  EXPECT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(cuCtxGetDevice_v2(&dev, c1), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);

  size_t free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, kGpu1Memory);
  EXPECT_EQ(free, kGpu1Memory - kContextMemory);

  CUcontext popped = nullptr;
  EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, c2);
  EXPECT_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, c1);
  EXPECT_EQ(cuCtxSetCurrent(c2), CUDA_SUCCESS);  // replaces the top
  EXPECT_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, c2);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);

  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 10 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDestroy(c2), CUDA_SUCCESS);  // current: also popped
  EXPECT_EQ(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
  EXPECT_EQ(cur, nullptr);
  EXPECT_EQ(cuCtxDestroy(c2), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxSetCurrent(c2), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxDestroy(c1), CUDA_SUCCESS);

  CUcontext c3 = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&c3, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(free, kGpu1Memory - kContextMemory);  // c2's context memory and 10 MiB are back
  EXPECT_EQ(cuCtxDestroy(c3), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxCreate_v2(nullptr, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuCtxCreate_v2(&c3, 0, 3), CUDA_ERROR_INVALID_DEVICE);

  CUcontext primary = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDestroy(primary), CUDA_ERROR_INVALID_CONTEXT);  // primary: release, not destroy
  EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

TEST_F(ContextTest, StreamPriorityRange) {
  int least = 1, greatest = 1;
  EXPECT_EQ(cuCtxGetStreamPriorityRange(&least, &greatest), CUDA_SUCCESS);
  EXPECT_EQ(least, 0);
  EXPECT_EQ(greatest, -5);
}

}  // namespace
}  // namespace vgpu::fake::test
