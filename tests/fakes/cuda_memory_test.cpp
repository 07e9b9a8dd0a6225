// Device memory: exact accounting, OOM at the boundary, pitch/managed/async/pool/VMM/array/
// module memory.

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "cuda_test_util.h"

namespace vgpu::fake::test {
namespace {

using MemoryTest = PrimaryContextTest;

TEST_F(MemoryTest, OutOfMemoryExactlyAtTheBoundary) {
  const size_t free = FreeMemory();
  ASSERT_EQ(free, kGpu0Memory - kContextMemory);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, free + 1), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(cuMemAlloc(&p, free), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), 0u);
  CUdeviceptr q = 0;
  EXPECT_EQ(cuMemAlloc(&q, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), free);
  EXPECT_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);  // double free
}

TEST_F(MemoryTest, AllocationsAreDistinctAlignedAndExact) {
  const size_t before = FreeMemory();
  std::set<CUdeviceptr> seen;
  CUdeviceptr ptrs[8];
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(cuMemAlloc(&ptrs[i], 1000 + i), CUDA_SUCCESS);
    EXPECT_EQ(ptrs[i] % 512, 0u);
    EXPECT_TRUE(seen.insert(ptrs[i]).second);
  }
  EXPECT_EQ(before - FreeMemory(), 8 * 1000u + 28u);  // no rounding
  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT_EQ(cuMemGetAddressRange(&base, &size, ptrs[3] + 500), CUDA_SUCCESS);
  EXPECT_EQ(base, ptrs[3]);
  EXPECT_EQ(size, 1003u);
  EXPECT_EQ(cuMemGetAddressRange(&base, nullptr, ptrs[3] + 1003), CUDA_ERROR_NOT_FOUND);
  for (auto p : ptrs) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);
  EXPECT_EQ(cuMemAlloc(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemGetInfo(nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MemoryTest, PitchIsRoundedTo512AndManagedMemoryCounts) {
  const size_t before = FreeMemory();
  CUdeviceptr p = 0;
  size_t pitch = 0;
  ASSERT_EQ(cuMemAllocPitch(&p, &pitch, 1000, 10, 4), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 1024u);
  EXPECT_EQ(before - FreeMemory(), 10240u);
  EXPECT_EQ(cuMemAllocPitch(&p, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAllocPitch(&p, nullptr, 1000, 10, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);

  CUdeviceptr m = 0;
  ASSERT_EQ(cuMemAllocManaged(&m, 3 * kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 3 * kMiB);
  EXPECT_EQ(cuMemAllocManaged(&m, kMiB, 0x7), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(m), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);
}

TEST_F(MemoryTest, StreamOrderedAllocationAndPools) {
  const size_t before = FreeMemory();
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, 5 * kMiB, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync_ptsz(&b, 7 * kMiB, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 12 * kMiB);
  EXPECT_EQ(cuMemFreeAsync(a, s), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeAsync_ptsz(b, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);
  EXPECT_EQ(cuMemAllocAsync(&a, FreeMemory() + 1, s), CUDA_ERROR_OUT_OF_MEMORY);

  CUmemoryPool def = nullptr, def2 = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&def, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&def2, 0), CUDA_SUCCESS);
  EXPECT_EQ(def, def2);
  EXPECT_EQ(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);

  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 9 * kMiB, pool, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync(&b, 1 * kMiB, def, s), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 10 * kMiB);
  EXPECT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);  // takes its 9 MiB along
  EXPECT_EQ(before - FreeMemory(), 1 * kMiB);
  EXPECT_EQ(cuMemFree(b), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocFromPoolAsync(&a, kMiB, nullptr, s), CUDA_ERROR_INVALID_VALUE);
  props.location.id = 5;
  EXPECT_EQ(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);
}

TEST_F(MemoryTest, VirtualMemoryManagement) {
  const size_t before = FreeMemory();
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  EXPECT_EQ(gran, 2 * kMiB);
  EXPECT_EQ(cuMemGetAllocationGranularity(&gran, nullptr, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_INVALID_VALUE);

  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, 3 * kMiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);  // not a multiple
  ASSERT_EQ(cuMemCreate(&h, 4 * kMiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 4 * kMiB);  // physical memory is charged at create

  CUdeviceptr va = 0;
  ASSERT_EQ(cuMemAddressReserve(&va, 8 * kMiB, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_EQ(va % (2 * kMiB), 0u);
  EXPECT_EQ(before - FreeMemory(), 4 * kMiB);  // reserving address space is free
  EXPECT_EQ(cuMemMap(va + 6 * kMiB, 4 * kMiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // overruns
  ASSERT_EQ(cuMemMap(va, 4 * kMiB, 0, h, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(va + 2 * kMiB, 2 * kMiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // overlap
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  EXPECT_EQ(cuMemSetAccess(va, 4 * kMiB, &access, 1), CUDA_SUCCESS);
  EXPECT_EQ(cuMemSetAccess(va, 6 * kMiB, &access, 1), CUDA_ERROR_INVALID_VALUE);  // unmapped tail
  CUdeviceptr base = 0;
  size_t size = 0;
  EXPECT_EQ(cuMemGetAddressRange(&base, &size, va + 100), CUDA_SUCCESS);
  EXPECT_EQ(base, va);
  EXPECT_EQ(size, 4 * kMiB);

  EXPECT_EQ(cuMemRelease(h), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 4 * kMiB);  // still mapped: memory stays
  EXPECT_EQ(cuMemAddressFree(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE);  // still mapped
  EXPECT_EQ(cuMemUnmap(va, 4 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);  // released and unmapped: gone
  EXPECT_EQ(cuMemAddressFree(va, 8 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);

  const size_t avail = FreeMemory() / (2 * kMiB) * (2 * kMiB);
  EXPECT_EQ(cuMemCreate(&h, avail + 2 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
}

TEST_F(MemoryTest, ArraysRoundToTwoMiB) {
  const size_t before = FreeMemory();
  CUDA_ARRAY_DESCRIPTOR d{};
  d.Width = 1024;
  d.Height = 1024;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 4;  // 16 MiB exactly
  CUarray a = nullptr;
  ASSERT_EQ(cuArrayCreate(&a, &d), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 16 * kMiB);
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  EXPECT_EQ(cuArrayGetMemoryRequirements(&req, a, 0), CUDA_SUCCESS);
  EXPECT_EQ(req.size, 16 * kMiB);
  EXPECT_EQ(req.alignment, 2 * kMiB);

  CUDA_ARRAY3D_DESCRIPTOR d3{};
  d3.Width = 100;
  d3.Height = 10;
  d3.Depth = 10;
  d3.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  d3.NumChannels = 1;  // 10000 bytes -> 2 MiB
  CUarray b = nullptr;
  ASSERT_EQ(cuArray3DCreate(&b, &d3), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 18 * kMiB);

  CUmipmappedArray mm = nullptr;
  d3.Width = 2048;
  d3.Height = 1024;
  d3.Depth = 0;
  d3.Format = CU_AD_FORMAT_HALF;  // level 0: 4 MiB, level 1: 1 MiB, level 2: 0.25 MiB -> 6 MiB
  ASSERT_EQ(cuMipmappedArrayCreate(&mm, &d3, 3), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 24 * kMiB);

  EXPECT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
  EXPECT_EQ(cuArrayDestroy(b), CUDA_SUCCESS);
  EXPECT_EQ(cuMipmappedArrayDestroy(mm), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);
  EXPECT_EQ(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
  d.NumChannels = 3;
  EXPECT_EQ(cuArrayCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMipmappedArrayCreate(&mm, &d3, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(MemoryTest, ModulesChargeModuleMemory) {
  const size_t before = FreeMemory();
  const char image[] = "fake cubin";
  CUmodule m1 = nullptr, m2 = nullptr;
  ASSERT_EQ(cuModuleLoadData(&m1, image), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleLoad(&m2, "/proc/self/exe"), CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), 2 * kModuleMemory);
  EXPECT_EQ(cuModuleLoad(&m2, "/nonexistent/kernel.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
  EXPECT_EQ(cuModuleLoadData(&m2, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUfunction f = nullptr, g = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&f, m1, "kernel"), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleGetFunction(&g, m1, "kernel"), CUDA_SUCCESS);
  EXPECT_EQ(f, g);
  EXPECT_EQ(cuModuleUnload(m1), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(m1), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuModuleGetFunction(&f, m1, "kernel"), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(before - FreeMemory(), kModuleMemory);
  // m2 is left loaded: releasing the primary context (TearDown) frees it.
}

TEST_F(MemoryTest, CopiesCheckDeviceRangesAndMoveNoData) {
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc(&a, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&b, 4096), CUDA_SUCCESS);
  unsigned char host[4096];
  std::memset(host, 0xab, sizeof host);
  EXPECT_EQ(cuMemcpyHtoD(a, host, sizeof host), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoD(a + 1, host, sizeof host), CUDA_ERROR_INVALID_VALUE);  // past the end
  EXPECT_EQ(cuMemcpyDtoD(b, a, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyDtoH(host, b, 100), CUDA_SUCCESS);
  EXPECT_EQ(host[0], 0);  // device memory holds no data: reads as zeros
  EXPECT_EQ(host[99], 0);
  EXPECT_EQ(host[100], 0xab);
  EXPECT_EQ(cuMemcpyDtoH(nullptr, b, 100), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemcpyHtoDAsync(a, host, 16, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyDtoHAsync(host, a, 16, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyDtoDAsync(a, b, 16, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8(a, 1, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD32(a, 1, 1024), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD32(a, 1, 1025), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemsetD8(0x10, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(cuMemsetD8(a, 1, 1), CUDA_ERROR_INVALID_VALUE);  // freed
  EXPECT_EQ(cuMemFree(b), CUDA_SUCCESS);
}

TEST_F(MemoryTest, LibrariesAreModulesWithLaunchableKernels) {
  const size_t before = FreeMemory();
  CUlibrary lib = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&lib, "image", nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(before - FreeMemory(), kModuleMemory);
  CUkernel k = nullptr;
  ASSERT_EQ(cuLibraryGetKernel(&k, lib, "kern"), CUDA_SUCCESS);
  CUfunction f = nullptr;
  ASSERT_EQ(cuKernelGetFunction(&f, k), CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr,
                           nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
  EXPECT_EQ(FreeMemory(), before);
  EXPECT_EQ(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_HANDLE);  // unloaded with its library
  EXPECT_EQ(cuLibraryLoadData(&lib, nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_ERROR_INVALID_VALUE);
}

TEST(MemoryOnSecondGpu, UsesTheCurrentContextsDevice) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext c = nullptr;
  ASSERT_EQ(cuCtxCreate_v2(&c, 0, 1), CUDA_SUCCESS);
  size_t free = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, kGpu1Memory - kContextMemory), CUDA_SUCCESS);  // > GPU 0's 1 GiB
  EXPECT_EQ(cuCtxDestroy(c), CUDA_SUCCESS);  // frees the allocation too
}

}  // namespace
}  // namespace vgpu::fake::test
