// Helper process for the multi-process tests. Commands:
//   preinit                 print the result codes of calls made before cuInit, then of cuInit
//   info                    print the visible device count and each device's UUID last byte
//   alloc <ordinal> <bytes> allocate in the primary context, print "ready <rc>", wait for EOF
//   busy <ordinal> <ms>     run kernels for <ms> ms of GPU time, print "ready <rc>", wait for EOF
//   xid <index> <xid>       post an Xid event on GPU <index> through the fake NVML, print its rc
//   nvmlmem <index>         print the result code of nvmlDeviceGetMemoryInfo on GPU <index>
//   launch <ordinal> <ms>   queue a <ms> ms kernel, print "ready <rc>" at once, wait for EOF
// The process exits without freeing anything: the fake driver must reclaim its memory.

#include <cuda.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nvml_api.h"

namespace {

void WaitForEof() {
  char buf[64];
  while (read(STDIN_FILENO, buf, sizeof buf) > 0) {
  }
}

int Usage() {
  std::fprintf(stderr,
               "usage: fake_driver_child preinit|info|alloc <ord> <bytes>|busy <ord> <ms>\n");
  return 2;
}

CUresult SetUpContext(int ordinal) {
  if (CUresult rc = cuInit(0); rc != CUDA_SUCCESS) return rc;
  CUcontext ctx = nullptr;
  if (CUresult rc = cuDevicePrimaryCtxRetain(&ctx, ordinal); rc != CUDA_SUCCESS) return rc;
  return cuCtxSetCurrent(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string cmd = argv[1];
  if (cmd == "preinit") {
    int count = 0;
    CUcontext ctx = nullptr;
    CUdeviceptr p = 0;
    std::printf("%d %d %d", cuDeviceGetCount(&count), cuCtxGetCurrent(&ctx), cuMemAlloc(&p, 16));
    std::printf(" %d\n", cuInit(0));
    return 0;
  }
  if (cmd == "xid" && argc == 4) {
    nvmlReturn_t rc = nvmlInit_v2();
    if (rc == NVML_SUCCESS) {
      rc = vgpuFakeInjectXid(static_cast<unsigned>(std::atoi(argv[2])),
                             std::strtoull(argv[3], nullptr, 10));
    }
    std::printf("%d\n", rc);
    return 0;
  }
  if (cmd == "nvmlmem" && argc == 3) {
    nvmlReturn_t rc = nvmlInit_v2();
    nvmlDevice_t dev = nullptr;
    if (rc == NVML_SUCCESS) rc = nvmlDeviceGetHandleByIndex_v2(std::atoi(argv[2]), &dev);
    nvmlMemory_t mem{};
    if (rc == NVML_SUCCESS) rc = nvmlDeviceGetMemoryInfo(dev, &mem);
    std::printf("%d\n", rc);
    return 0;
  }
  if (cmd == "info") {
    int count = -1;
    const CUresult rc = cuInit(0);
    if (rc == CUDA_SUCCESS) cuDeviceGetCount(&count);
    std::printf("%d %d", rc, count);
    for (int i = 0; i < count; ++i) {
      CUuuid uuid{};
      cuDeviceGetUuid(&uuid, i);
      std::printf(" %02x", static_cast<unsigned char>(uuid.bytes[15]));
    }
    std::printf("\n");
    return 0;
  }
  if ((cmd == "alloc" || cmd == "busy" || cmd == "launch") && argc == 4) {
    const int ordinal = std::atoi(argv[2]);
    const unsigned long long amount = std::strtoull(argv[3], nullptr, 10);
    CUresult rc = SetUpContext(ordinal);
    if (rc == CUDA_SUCCESS && cmd == "alloc") {
      CUdeviceptr p = 0;
      rc = cuMemAlloc(&p, amount);
    } else if (rc == CUDA_SUCCESS) {
      CUmodule m = nullptr;
      CUfunction f = nullptr;
      rc = cuModuleLoadData(&m, "x");
      if (rc == CUDA_SUCCESS) rc = cuModuleGetFunction(&f, m, "k");
      uint64_t ns = amount * 1'000'000ULL;
      void* params[] = {&ns};
      if (rc == CUDA_SUCCESS) rc = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
      if (rc == CUDA_SUCCESS && cmd == "busy") rc = cuCtxSynchronize();
    }
    std::printf("ready %d\n", rc);
    std::fflush(stdout);
    WaitForEof();
    return 0;
  }
  return Usage();
}
