// The fake NVML: device queries and memory / process accounting consistent with the fake CUDA
// side of the same process.

#include <cuda.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "cuda_test_util.h"
#include "nvml_api.h"
#include "test_env.h"

namespace vgpu::fake::test {
namespace {

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &dev0_), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &dev1_), NVML_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }
  nvmlDevice_t dev0_ = nullptr;
  nvmlDevice_t dev1_ = nullptr;
};

TEST(NvmlLifecycle, CallsNeedInitAndShutdownIsCounted) {
  unsigned count = 0;
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(nvmlInitWithFlags(0), NVML_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);  // one init still outstanding
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_STREQ(nvmlErrorString(NVML_ERROR_INSUFFICIENT_SIZE), "Insufficient Size");
  EXPECT_STREQ(nvmlErrorString(NVML_ERROR_UNINITIALIZED), "Uninitialized");
}

TEST_F(NvmlTest, DeviceIdentity) {
  unsigned count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(2, &d), NVML_ERROR_INVALID_ARGUMENT);
  char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  ASSERT_EQ(nvmlDeviceGetUUID(dev1_, buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "GPU-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(nvmlDeviceGetUUID(dev1_, buf, 10), NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000001", &d),
            NVML_SUCCESS);
  EXPECT_EQ(d, dev1_);
  EXPECT_EQ(nvmlDeviceGetHandleByUUID("GPU-ffffffff-0000-0000-0000-000000000001", &d),
            NVML_ERROR_NOT_FOUND);
  unsigned index = 9, minor = 9, numa = 9;
  EXPECT_EQ(nvmlDeviceGetIndex(dev1_, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(nvmlDeviceGetMinorNumber(dev1_, &minor), NVML_SUCCESS);
  EXPECT_EQ(minor, 1u);
  EXPECT_EQ(nvmlDeviceGetNumaNodeId(dev1_, &numa), NVML_SUCCESS);
  EXPECT_EQ(numa, 0u);
  EXPECT_EQ(nvmlDeviceGetIndex(nullptr, &index), NVML_ERROR_INVALID_ARGUMENT);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(nvmlDeviceGetName(dev0_, name, sizeof name), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  EXPECT_EQ(nvmlSystemGetDriverVersion(version, sizeof version), NVML_SUCCESS);
  EXPECT_STREQ(version, "580.65.06");
  int cuda = 0;
  EXPECT_EQ(nvmlSystemGetCudaDriverVersion(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 13000);
  EXPECT_EQ(nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(dev1_, &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:19:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:19:00.0");
  EXPECT_EQ(pci.bus, 0x19u);
  EXPECT_EQ(pci.pciDeviceId, 0x233010deu);
}

TEST_F(NvmlTest, MemoryAndProcessesFollowTheCudaSide) {
  nvmlMemory_t mem{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(dev0_, &mem), NVML_SUCCESS);
  const unsigned long long used_before = mem.used;
  EXPECT_EQ(mem.total, kGpu0Memory);

  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxPushCurrent(ctx), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 100 * kMiB), CUDA_SUCCESS);
  CUmodule m = nullptr;
  ASSERT_EQ(cuModuleLoadData(&m, "x"), CUDA_SUCCESS);
  const unsigned long long mine = kContextMemory + 100 * kMiB + kModuleMemory;

  ASSERT_EQ(nvmlDeviceGetMemoryInfo(dev0_, &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.used - used_before, mine);
  EXPECT_EQ(mem.free + mem.used, mem.total);
  nvmlMemory_v2_t mem2{};
  mem2.version = nvmlMemory_v2;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo_v2(dev0_, &mem2), NVML_SUCCESS);
  EXPECT_EQ(mem2.used, mem.used);
  EXPECT_EQ(mem2.total, kGpu0Memory);
  EXPECT_EQ(mem2.reserved, 0u);
  mem2.version = 1;
  EXPECT_EQ(nvmlDeviceGetMemoryInfo_v2(dev0_, &mem2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

  unsigned count = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(dev0_, &count, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(count, 1u);
  nvmlProcessInfo_t infos[4]{};
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(dev0_, &count, infos), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(infos[0].pid, static_cast<unsigned>(getpid()));
  EXPECT_EQ(infos[0].usedGpuMemory, mine);
  EXPECT_EQ(infos[0].gpuInstanceId, 0xFFFFFFFFu);
  nvmlProcessInfo_v2_t v2[1]{};
  count = 1;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v2(dev0_, &count, v2), NVML_SUCCESS);
  EXPECT_EQ(v2[0].usedGpuMemory, mine);
  nvmlProcessInfo_v1_t v1[1]{};
  count = 1;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses(dev0_, &count, v1), NVML_SUCCESS);
  EXPECT_EQ(v1[0].pid, static_cast<unsigned>(getpid()));
  count = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(dev1_, &count, nullptr), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);  // nothing on GPU 1

  EXPECT_EQ(cuCtxPopCurrent(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(dev0_, &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.used, used_before);
  count = 0;
  EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(dev0_, &count, nullptr), NVML_SUCCESS);
}

TEST_F(NvmlTest, UtilizationReflectsKernelTime) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&ctx, 0, 1), CUDA_SUCCESS);
  CUmodule m = nullptr;
  CUfunction f = nullptr;
  ASSERT_EQ(cuModuleLoadData(&m, "x"), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&f, m, "k"), CUDA_SUCCESS);
  nvmlProcessUtilizationSample_t samples[4]{};
  unsigned n = 4;
  // Quiet device: no samples newer than "now".
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  const unsigned long long start_us = ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(dev1_, samples, &n, start_us), NVML_ERROR_NOT_FOUND);

  uint64_t ns = 300'000'000;  // the device is busy for 300 ms of the window
  void* params[] = {&ns};
  ASSERT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);

  n = 0;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(dev1_, nullptr, &n, start_us),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 1u);
  n = 4;
  ASSERT_EQ(nvmlDeviceGetProcessUtilization(dev1_, samples, &n, start_us), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(samples[0].pid, static_cast<unsigned>(getpid()));
  EXPECT_GE(samples[0].timeStamp, start_us);
  // 300 ms busy in a window of at least 300 ms: high, though host delays widen the window.
  EXPECT_GT(samples[0].smUtil, 30u);
  EXPECT_LE(samples[0].smUtil, 100u);
  nvmlUtilization_t util{};
  ASSERT_EQ(nvmlDeviceGetUtilizationRates(dev1_, &util), NVML_SUCCESS);
  EXPECT_GT(util.gpu, 5u);  // at least part of the last second was busy
  ASSERT_EQ(nvmlDeviceGetUtilizationRates(dev0_, &util), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(dev1_, samples, nullptr, 0),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(cuCtxDestroy(ctx), CUDA_SUCCESS);
}

}  // namespace
}  // namespace vgpu::fake::test
