// Cross-process behaviour: usage seen by NVML in another process, OOM across processes,
// reclaim after SIGKILL, per-process utilization, CUDA_VISIBLE_DEVICES, errors before cuInit.
// Time slicing between processes: time_slicing_test.cpp.

#include <cuda.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "child_process.h"
#include "cuda_test_util.h"
#include "nvml_api.h"
#include "test_env.h"

namespace vgpu::fake::test {
namespace {

// A child process running fake_driver_child.
class Child : public ChildProcess {
 public:
  explicit Child(std::vector<std::string> args, std::vector<std::string> extra_env = {})
      : ChildProcess(FAKE_DRIVER_CHILD, std::move(args), std::move(extra_env)) {}
};

class MultiProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &dev1_), NVML_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }
  unsigned long long Used() {
    nvmlMemory_t mem{};
    EXPECT_EQ(nvmlDeviceGetMemoryInfo(dev1_, &mem), NVML_SUCCESS);
    return mem.used;
  }
  unsigned long long UsedBy(pid_t pid) {
    nvmlProcessInfo_t infos[16]{};
    unsigned n = 16;
    EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(dev1_, &n, infos), NVML_SUCCESS);
    for (unsigned i = 0; i < n; ++i) {
      if (infos[i].pid == static_cast<unsigned>(pid)) return infos[i].usedGpuMemory;
    }
    return 0;
  }
  nvmlDevice_t dev1_ = nullptr;
};

TEST_F(MultiProcessTest, ChildUsageIsVisibleAndReclaimedAfterSigkill) {
  const auto base = Used();
  Child child({"alloc", "1", std::to_string(300 * kMiB)});
  ASSERT_EQ(child.ReadLine(), "ready 0");
  EXPECT_EQ(Used() - base, kContextMemory + 300 * kMiB);
  EXPECT_EQ(UsedBy(child.pid()), kContextMemory + 300 * kMiB);
  child.Kill();
  EXPECT_EQ(Used(), base);
  EXPECT_EQ(UsedBy(child.pid()), 0u);
}

TEST_F(MultiProcessTest, ExitWithoutFreeingIsReclaimed) {
  const auto base = Used();
  Child child({"alloc", "1", std::to_string(10 * kMiB)});
  ASSERT_EQ(child.ReadLine(), "ready 0");
  EXPECT_EQ(Used() - base, kContextMemory + 10 * kMiB);
  EXPECT_EQ(child.Finish(), 0);
  EXPECT_EQ(Used(), base);
}

TEST_F(MultiProcessTest, OutOfMemoryAcrossProcesses) {
  const auto base = Used();
  const unsigned long long rest = kGpu1Memory - base - kContextMemory;
  Child first({"alloc", "1", std::to_string(rest - 5 * kMiB)});
  ASSERT_EQ(first.ReadLine(), "ready 0");
  // The second child's context fits (64 MiB is not free: only 5 MiB is) -> OOM at context creation.
  Child second({"alloc", "1", std::to_string(kMiB)});
  EXPECT_EQ(second.ReadLine(), "ready " + std::to_string(CUDA_ERROR_OUT_OF_MEMORY));
  first.Kill();
  Child third({"alloc", "1", std::to_string(rest)});  // exactly what is left after its context
  EXPECT_EQ(third.ReadLine(), "ready 0");
  EXPECT_EQ(Used(), kGpu1Memory);
}

TEST_F(MultiProcessTest, ProcessUtilizationNamesTheBusyProcess) {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  const unsigned long long since = ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
  Child child({"busy", "1", "300"});
  ASSERT_EQ(child.ReadLine(), "ready 0");
  nvmlProcessUtilizationSample_t samples[8]{};
  unsigned n = 8;
  ASSERT_EQ(nvmlDeviceGetProcessUtilization(dev1_, samples, &n, since), NVML_SUCCESS);
  bool found = false;
  for (unsigned i = 0; i < n; ++i) {
    if (samples[i].pid == static_cast<unsigned>(child.pid())) {
      found = true;
      EXPECT_GT(samples[i].smUtil, 10u);  // 300 ms of kernels in a window including spawn time
      EXPECT_LE(samples[i].smUtil, 100u);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(MultiProcessTest, XidEventsReachRegisteredEventSets) {
  nvmlDevice_t dev0 = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &dev0), NVML_SUCCESS);
  unsigned long long supported = 0;
  ASSERT_EQ(nvmlDeviceGetSupportedEventTypes(dev1_, &supported), NVML_SUCCESS);
  EXPECT_EQ(supported, static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvmlEventSetCreate(&set), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceRegisterEvents(dev1_, 0x1, set), NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(nvmlDeviceRegisterEvents(dev1_, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  nvmlEventData_t data{};
  EXPECT_EQ(nvmlEventSetWait_v2(set, &data, 10), NVML_ERROR_TIMEOUT);

  {
    Child other_gpu({"xid", "0", "48"});  // GPU 0 is not registered
    EXPECT_EQ(other_gpu.ReadLine(), "0");
  }
  EXPECT_EQ(nvmlEventSetWait_v2(set, &data, 20), NVML_ERROR_TIMEOUT);
  {
    Child injector({"xid", "1", "79"});  // posted by another process
    EXPECT_EQ(injector.ReadLine(), "0");
  }
  ASSERT_EQ(nvmlEventSetWait_v2(set, &data, 10000), NVML_SUCCESS);
  EXPECT_EQ(data.device, dev1_);
  EXPECT_EQ(data.eventType, static_cast<unsigned long long>(nvmlEventTypeXidCriticalError));
  EXPECT_EQ(data.eventData, 79U);
  EXPECT_EQ(nvmlEventSetWait(set, &data, 0), NVML_ERROR_TIMEOUT);  // delivered once

  ASSERT_EQ(vgpuFakeInjectXid(1, 31), NVML_SUCCESS);
  ASSERT_EQ(vgpuFakeInjectXid(1, 43), NVML_SUCCESS);
  ASSERT_EQ(nvmlEventSetWait(set, &data, 1000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 31U);  // in order
  ASSERT_EQ(nvmlEventSetWait(set, &data, 1000), NVML_SUCCESS);
  EXPECT_EQ(data.eventData, 43U);
  EXPECT_EQ(vgpuFakeInjectXid(7, 1), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlEventSetWait_v2(set, nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlEventSetFree(set), NVML_SUCCESS);
  EXPECT_EQ(nvmlEventSetFree(set), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(MultiProcessTest, LostGpuFailsNvmlQueriesEverywhere) {
  ASSERT_EQ(vgpuFakeSetGpuLost(1, 1), NVML_SUCCESS);
  nvmlMemory_t mem{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(dev1_, &mem), NVML_ERROR_GPU_IS_LOST);
  char uuid[96];
  EXPECT_EQ(nvmlDeviceGetUUID(dev1_, uuid, sizeof uuid), NVML_ERROR_GPU_IS_LOST);
  {
    Child other({"nvmlmem", "1"});
    EXPECT_EQ(other.ReadLine(), std::to_string(NVML_ERROR_GPU_IS_LOST));
  }
  {
    Child other({"nvmlmem", "0"});  // only GPU 1 is lost
    EXPECT_EQ(other.ReadLine(), "0");
  }
  ASSERT_EQ(vgpuFakeSetGpuLost(1, 0), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(dev1_, &mem), NVML_SUCCESS);
  Child other({"nvmlmem", "1"});
  EXPECT_EQ(other.ReadLine(), "0");
  EXPECT_EQ(vgpuFakeSetGpuLost(9, 1), NVML_ERROR_INVALID_ARGUMENT);
}

TEST(CudaVisibleDevices, SelectsAndReordersDevices) {
  {
    Child c({"info"}, {"CUDA_VISIBLE_DEVICES=1"});
    EXPECT_EQ(c.ReadLine(), "0 1 01");
  }
  {
    Child c({"info"}, {"CUDA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000001,0"});
    EXPECT_EQ(c.ReadLine(), "0 2 01 00");
  }
  {
    Child c({"info"}, {"CUDA_VISIBLE_DEVICES="});
    EXPECT_EQ(c.ReadLine(), std::to_string(CUDA_ERROR_NO_DEVICE) + " -1");
  }
  {
    Child c({"info"}, {"VGPU_FAKE_GPU_MEMORY=lots"});
    EXPECT_EQ(c.ReadLine(), std::to_string(CUDA_ERROR_INVALID_VALUE) + " -1");
  }
}

TEST(BeforeInit, CallsReturnNotInitialized) {
  Child c({"preinit"});
  const int ni = CUDA_ERROR_NOT_INITIALIZED;
  EXPECT_EQ(c.ReadLine(),
            std::to_string(ni) + " " + std::to_string(ni) + " " + std::to_string(ni) + " 0");
}

}  // namespace
}  // namespace vgpu::fake::test
