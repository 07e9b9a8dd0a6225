// Unified-memory hints (cuMemAdvise / cuMemPrefetchAsync in both ABIs, read back through
// cuMemRangeGetAttribute) and cuMipmappedArrayGetMemoryRequirements. The CUDA 8 entry points are
// reached through cuGetProcAddress, as applications do: cuda.h maps the plain names to _v2.

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace vgpu::fake::test {
namespace {

template <typename Fn>
Fn Proc(const char* symbol, int version, cuuint64_t flags = 0) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  EXPECT_EQ(cuGetProcAddress_v2(symbol, &fn, version, flags, &status), CUDA_SUCCESS) << symbol;
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS) << symbol;
  return reinterpret_cast<Fn>(fn);
}

int RangeAttribute(CUmem_range_attribute attribute, CUdeviceptr p, size_t count) {
  int value = -100;
  EXPECT_EQ(cuMemRangeGetAttribute(&value, sizeof(value), attribute, p, count), CUDA_SUCCESS);
  return value;
}

class ManagedTest : public PrimaryContextTest {
 protected:
  void SetUp() override {
    PrimaryContextTest::SetUp();
    ASSERT_EQ(cuMemAllocManaged(&managed_, kBytes, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  }
  static constexpr size_t kBytes = 1 << 20;
  CUdeviceptr managed_ = 0;
};

TEST_F(ManagedTest, ProcAddressServesEveryAbi) {
  struct Case {
    const char* symbol;
    int version;
    cuuint64_t flags;
    const char* want;
  };
  const Case cases[] = {
      {"cuMemAdvise", 8000, 0, "cuMemAdvise"},
      {"cuMemAdvise", 12010, 0, "cuMemAdvise"},
      {"cuMemAdvise", 12020, 0, "cuMemAdvise_v2"},
      {"cuMemAdvise", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAdvise_v2"},
      {"cuMemPrefetchAsync", 8000, 0, "cuMemPrefetchAsync"},
      {"cuMemPrefetchAsync", 8000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuMemPrefetchAsync_ptsz"},
      {"cuMemPrefetchAsync", 12020, 0, "cuMemPrefetchAsync_v2"},
      {"cuMemPrefetchAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuMemPrefetchAsync_v2_ptsz"},
      {"cuMipmappedArrayGetMemoryRequirements", 11060, 0, "cuMipmappedArrayGetMemoryRequirements"},
      {"cuMemRangeGetAttribute", 12000, 0, "cuMemRangeGetAttribute"},
  };
  for (const auto& c : cases) {
    void* fn = Proc<void*>(c.symbol, c.version, c.flags);
    void* exported = dlsym(RTLD_DEFAULT, c.want);
    ASSERT_NE(exported, nullptr) << c.want << " is not exported";
    EXPECT_EQ(fn, exported) << c.symbol << "@" << c.version << " should be " << c.want;
  }
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(cuGetProcAddress_v2("cuMipmappedArrayGetMemoryRequirements", &fn, 11050, 0, &status),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST_F(ManagedTest, LegacyAdviseTakesADeviceOrdinal) {
  auto advise = Proc<PFN_cuMemAdvise_v8000>("cuMemAdvise", 8000);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, managed_, kBytes),
            CU_DEVICE_INVALID);
  ASSERT_EQ(advise(managed_, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev_), CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, managed_, kBytes), dev_);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, managed_, 1),
            CU_MEM_LOCATION_TYPE_DEVICE);
  ASSERT_EQ(advise(managed_ + 4096, 10, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU),
            CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, managed_, kBytes),
            CU_DEVICE_CPU);
  ASSERT_EQ(advise(managed_, kBytes, CU_MEM_ADVISE_SET_READ_MOSTLY, dev_), CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, managed_, kBytes), 1);
  ASSERT_EQ(advise(managed_, kBytes, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, dev_), CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, managed_, kBytes),
            CU_DEVICE_INVALID);
  // Errors: bad ordinal, bad advice, range outside managed memory, device memory.
  EXPECT_EQ(advise(managed_, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 7),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(advise(managed_, kBytes, static_cast<CUmem_advise>(99), dev_),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(advise(managed_, kBytes + 1, CU_MEM_ADVISE_SET_READ_MOSTLY, dev_),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(advise(managed_, 0, CU_MEM_ADVISE_SET_READ_MOSTLY, dev_), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr device = 0;
  ASSERT_EQ(cuMemAlloc(&device, 4096), CUDA_SUCCESS);
  EXPECT_EQ(advise(device, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, dev_), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ManagedTest, AdviseV2TakesALocation) {
  // cuda.h maps cuMemAdvise to cuMemAdvise_v2.
  const CUmemLocation gpu{CU_MEM_LOCATION_TYPE_DEVICE, dev_};
  ASSERT_EQ(cuMemAdvise(managed_, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, gpu), CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, managed_, kBytes), dev_);
  const CUmemLocation numa{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  ASSERT_EQ(cuMemAdvise(managed_, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, numa),
            CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, managed_, kBytes),
            CU_MEM_LOCATION_TYPE_HOST_NUMA);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, managed_, kBytes),
            CU_DEVICE_CPU);
  const CUmemLocation bad_gpu{CU_MEM_LOCATION_TYPE_DEVICE, 9};
  EXPECT_EQ(cuMemAdvise(managed_, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, bad_gpu),
            CUDA_ERROR_INVALID_DEVICE);
  const CUmemLocation bad_type{static_cast<CUmemLocationType>(42), 0};
  EXPECT_EQ(cuMemAdvise(managed_, kBytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, bad_type),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ManagedTest, PrefetchBothAbisAndStreams) {
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, managed_, kBytes),
            CU_DEVICE_INVALID);
  auto legacy = Proc<PFN_cuMemPrefetchAsync_v8000>("cuMemPrefetchAsync", 8000);
  auto legacy_pt = Proc<PFN_cuMemPrefetchAsync_v8000_ptsz>(
      "cuMemPrefetchAsync", 8000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  auto v2 = Proc<PFN_cuMemPrefetchAsync_v12020>("cuMemPrefetchAsync", 12020);
  auto v2_pt = Proc<PFN_cuMemPrefetchAsync_v12020_ptsz>(
      "cuMemPrefetchAsync", 12020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  ASSERT_EQ(legacy(managed_, kBytes, dev_, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, managed_, kBytes), dev_);
  ASSERT_EQ(legacy_pt(managed_, kBytes, CU_DEVICE_CPU, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, managed_, kBytes),
            CU_DEVICE_CPU);
  ASSERT_EQ(v2(managed_, kBytes, CUmemLocation{CU_MEM_LOCATION_TYPE_DEVICE, dev_}, 0, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, managed_, kBytes),
            CU_MEM_LOCATION_TYPE_DEVICE);
  ASSERT_EQ(
      v2_pt(managed_, 64, CUmemLocation{CU_MEM_LOCATION_TYPE_HOST, 0}, 0, CU_STREAM_PER_THREAD),
      CUDA_SUCCESS);
  EXPECT_EQ(RangeAttribute(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, managed_, kBytes),
            CU_MEM_LOCATION_TYPE_HOST);
  // Errors: flags, unknown stream, bad device, outside managed memory.
  const CUmemLocation gpu{CU_MEM_LOCATION_TYPE_DEVICE, dev_};
  EXPECT_EQ(v2(managed_, kBytes, gpu, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v2(managed_, kBytes, gpu, 0, reinterpret_cast<CUstream>(0x1234)),
            CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(legacy(managed_, kBytes, 5, nullptr), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(legacy(managed_ + kBytes, 1, dev_, nullptr), CUDA_ERROR_INVALID_VALUE);
  int value = 0;
  EXPECT_EQ(cuMemRangeGetAttribute(&value, sizeof(value), CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY,
                                   managed_, kBytes),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuMemRangeGetAttribute(&value, 2, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, managed_, kBytes),
            CUDA_ERROR_INVALID_VALUE);
}

TEST_F(ManagedTest, MipmappedArrayRequirementsMatchWhatWasCharged) {
  const size_t before = FreeMemory();
  CUDA_ARRAY3D_DESCRIPTOR d3{};
  d3.Width = 2048;
  d3.Height = 1024;
  d3.Format = CU_AD_FORMAT_FLOAT;
  d3.NumChannels = 4;
  CUmipmappedArray mm = nullptr;
  ASSERT_EQ(cuMipmappedArrayCreate(&mm, &d3, 4), CUDA_SUCCESS);
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  ASSERT_EQ(cuMipmappedArrayGetMemoryRequirements(&req, mm, dev_), CUDA_SUCCESS);
  // 32 MiB + 8 + 2 + 0.5 MiB, rounded up to 2 MiB.
  EXPECT_EQ(req.size, 44u << 20);
  EXPECT_EQ(req.alignment, 2u << 20);
  EXPECT_EQ(before - FreeMemory(), req.size);
  EXPECT_EQ(cuMipmappedArrayGetMemoryRequirements(nullptr, mm, dev_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMipmappedArrayGetMemoryRequirements(&req, mm, 3), CUDA_ERROR_INVALID_DEVICE);
  ASSERT_EQ(cuMipmappedArrayDestroy(mm), CUDA_SUCCESS);
  EXPECT_EQ(cuMipmappedArrayGetMemoryRequirements(&req, mm, dev_), CUDA_ERROR_INVALID_HANDLE);
}

// A context's memory (allocations, managed, pitch, arrays, modules and the context itself) goes
// with it, as with a real driver; stream-ordered memory belongs to the process and stays.
TEST_F(ManagedTest, DestroyedContextFreesWhatItOwnsButNotStreamOrderedMemory) {
  const size_t before = FreeMemory();
  CUcontext c = nullptr;
  ASSERT_EQ(cuCtxCreate(&c, nullptr, 0, dev_), CUDA_SUCCESS);  // pushed: current
  CUdeviceptr d = 0, m = 0, p = 0, s = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemAlloc(&d, 10 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocManaged(&m, 5 * kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocPitch(&p, &pitch, 1000, 100, 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&s, 4 * kMiB, nullptr), CUDA_SUCCESS);
  CUDA_ARRAY_DESCRIPTOR ad{};
  ad.Width = 512;
  ad.Height = 1024;
  ad.Format = CU_AD_FORMAT_FLOAT;
  ad.NumChannels = 1;
  CUarray array = nullptr;
  ASSERT_EQ(cuArrayCreate(&array, &ad), CUDA_SUCCESS);
  CUmodule mod = nullptr;
  ASSERT_EQ(cuModuleLoadData(&mod, "image"), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), kContextMemory + 21 * kMiB + 1024 * 100 + kModuleMemory);
  ASSERT_EQ(cuCtxDestroy(c), CUDA_SUCCESS);  // the primary context is current again
  EXPECT_EQ(before - FreeMemory(), 4 * kMiB);
  EXPECT_EQ(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuArrayDestroy(array), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuMemFreeAsync(s, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);

  // The last release of a primary context frees its allocations too.
  CUcontext primary1 = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary1, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&d, 100 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocManaged(&m, 100 * kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  size_t free1 = 0, total1 = 0;
  ASSERT_EQ(cuMemGetInfo(&free1, &total1), CUDA_SUCCESS);
  EXPECT_EQ(free1, kGpu1Memory - kContextMemory - 200 * kMiB);
  ASSERT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&primary1, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(primary1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemGetInfo(&free1, &total1), CUDA_SUCCESS);
  EXPECT_EQ(free1, kGpu1Memory - kContextMemory);
  ASSERT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
}

}  // namespace
}  // namespace vgpu::fake::test
