// cuGetProcAddress_v2: version selection, per-thread-stream variants, unknown symbols.

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace {

void* Exported(const char* name) {
  void* sym = dlsym(RTLD_DEFAULT, name);
  EXPECT_NE(sym, nullptr) << name << " is not exported by the fake libcuda";
  return sym;
}

struct Case {
  const char* symbol;
  int version;
  cuuint64_t flags;
  const char* want;  // exported name expected
};

TEST(GetProcAddress, PicksHighestVersionNotAboveRequested) {
  const Case cases[] = {
      {"cuMemAlloc", 13000, 0, "cuMemAlloc_v2"},
      {"cuMemGetInfo", 12000, 0, "cuMemGetInfo_v2"},
      {"cuCtxCreate", 3020, 0, "cuCtxCreate_v2"},
      {"cuCtxCreate", 11040, 0, "cuCtxCreate_v3"},
      {"cuCtxCreate", 12040, 0, "cuCtxCreate_v3"},
      {"cuCtxCreate", 12050, 0, "cuCtxCreate_v4"},
      {"cuCtxCreate", 13000, 0, "cuCtxCreate_v4"},
      {"cuEventElapsedTime", 12000, 0, "cuEventElapsedTime"},
      {"cuEventElapsedTime", 12080, 0, "cuEventElapsedTime_v2"},
      {"cuDeviceGetUuid", 11000, 0, "cuDeviceGetUuid"},
      {"cuDeviceGetUuid", 11040, 0, "cuDeviceGetUuid_v2"},
      {"cuDevicePrimaryCtxRelease", 10020, 0, "cuDevicePrimaryCtxRelease"},
      {"cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2"},
      {"cuStreamDestroy", 13000, 0, "cuStreamDestroy_v2"},
      {"cuGraphInstantiate", 11000, 0, "cuGraphInstantiate_v2"},
      {"cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags"},
      {"cuGraphAddKernelNode", 12000, 0, "cuGraphAddKernelNode_v2"},
      {"cuCtxSynchronize", 12090, 0, "cuCtxSynchronize"},
      {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
      {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
      {"cuStreamBeginCapture", 10000, 0, "cuStreamBeginCapture"},
      {"cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2"},
  };
  for (const auto& c : cases) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    EXPECT_EQ(cuGetProcAddress_v2(c.symbol, &fn, c.version, c.flags, &status), CUDA_SUCCESS)
        << c.symbol << "@" << c.version;
    EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
    EXPECT_EQ(fn, Exported(c.want)) << c.symbol << "@" << c.version << " should be " << c.want;
  }
}

TEST(GetProcAddress, PerThreadDefaultStreamSelectsPtszVariants) {
  const Case cases[] = {
      {"cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuLaunchKernel_ptsz"},
      {"cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuLaunchKernel"},
      {"cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_DEFAULT, "cuLaunchKernel"},
      {"cuLaunchKernelEx", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuLaunchKernelEx_ptsz"},
      {"cuStreamSynchronize", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuStreamSynchronize_ptsz"},
      {"cuMemAllocAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuMemAllocAsync_ptsz"},
      {"cuGraphLaunch", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuGraphLaunch_ptsz"},
      {"cuStreamBeginCapture", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuStreamBeginCapture_v2_ptsz"},
      {"cuEventRecord", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuEventRecord_ptsz"},
      {"cuMemcpyHtoD", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuMemcpyHtoD_v2_ptds"},
      {"cuMemcpyHtoD", 12000, 0, "cuMemcpyHtoD_v2"},
      {"cuMemcpyDtoHAsync", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuMemcpyDtoHAsync_v2_ptsz"},
      // APIs without a stream have no _ptsz variant: the flag changes nothing.
      {"cuMemAlloc", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAlloc_v2"},
  };
  for (const auto& c : cases) {
    void* fn = nullptr;
    EXPECT_EQ(cuGetProcAddress_v2(c.symbol, &fn, c.version, c.flags, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(fn, Exported(c.want)) << c.symbol << " flags " << c.flags;
  }
}

TEST(GetProcAddress, UnknownSymbolsAndOldVersions) {
  void* fn = reinterpret_cast<void*>(0x1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(cuGetProcAddress_v2("cuNoSuchFunction", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
  EXPECT_EQ(cuGetProcAddress_v2("cuMemCreate", &fn, 10010, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(cuGetProcAddress_v2("cuMemAlloc_v2", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuGetProcAddress_v2(nullptr, &fn, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress_v2("cuInit", nullptr, 13000, 0, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress_v2("cuInit", &fn, 13000, 0x100, &status), CUDA_ERROR_INVALID_VALUE);
}

TEST(GetProcAddress, ReturnedFunctionsWork) {
  void* fn = nullptr;
  ASSERT_EQ(cuGetProcAddress_v2("cuDriverGetVersion", &fn, 13000, 0, nullptr), CUDA_SUCCESS);
  int version = 0;
  EXPECT_EQ(reinterpret_cast<CUresult (*)(int*)>(fn)(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
}

}  // namespace
