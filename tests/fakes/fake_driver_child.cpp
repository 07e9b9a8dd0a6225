// Helper process for the multi-process tests. Commands:
//   preinit                 print the result codes of calls made before cuInit, then of cuInit
//   info                    print the visible device count and each device's UUID last byte
//   alloc <ordinal> <bytes> allocate in the primary context, print "ready <rc>", wait for EOF
//   busy <ordinal> <ms>     run kernels for <ms> ms of GPU time, print "ready <rc>", wait for EOF
//   xid <index> <xid>       post an Xid event on GPU <index> through the fake NVML, print its rc
//   nvmlmem <index>         print the result code of nvmlDeviceGetMemoryInfo on GPU <index>
//   launch <ordinal> <ms>   queue a <ms> ms kernel, print "ready <rc>" at once, wait for EOF
//   saturate <ordinal> <us> launch <us> kernels without end (blocking while the queue is full);
//                           print "ready <rc>" once 200 are queued
//   fill <ordinal> <ms>     queue as many <ms> ms kernels as a context holds, then one more;
//                           print "<rc> <us to fill> <us until the extra launch returned>"
//   yield <ms_a> <ms_b>     on GPU 0, context A queues a <ms_a> kernel, then context B a <ms_b>
//                           one; print "<rc> <a start> <a end> <b start> <b end>" (ns)
// The process exits without freeing anything: the fake driver must reclaim its memory.

#include <cuda.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "fake_kernel_records.h"
#include "nvml_api.h"

extern "C" CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);

namespace {

void WaitForEof() {
  char buf[64];
  while (read(STDIN_FILENO, buf, sizeof buf) > 0) {
  }
}

int Usage() {
  std::fprintf(stderr,
               "usage: fake_driver_child preinit|info|alloc <ord> <bytes>|busy <ord> <ms>|"
               "xid <index> <xid>|nvmlmem <index>|launch <ord> <ms>|saturate <ord> <us>|"
               "fill <ord> <ms>|yield <ms_a> <ms_b>\n");
  return 2;
}

CUresult SetUpContext(int ordinal) {
  if (CUresult rc = cuInit(0); rc != CUDA_SUCCESS) return rc;
  CUcontext ctx = nullptr;
  if (CUresult rc = cuDevicePrimaryCtxRetain(&ctx, ordinal); rc != CUDA_SUCCESS) return rc;
  return cuCtxSetCurrent(ctx);
}

CUresult GetKernel(CUfunction* f) {
  CUmodule m = nullptr;
  if (CUresult rc = cuModuleLoadData(&m, "x"); rc != CUDA_SUCCESS) return rc;
  return cuModuleGetFunction(f, m, "k");
}

CUresult LaunchNs(CUfunction f, uint64_t ns) {
  void* params[] = {&ns};
  return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
}

long long NowUs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

int Saturate(int ordinal, uint64_t us) {
  CUfunction f = nullptr;
  CUresult rc = SetUpContext(ordinal);
  if (rc == CUDA_SUCCESS) rc = GetKernel(&f);
  for (int i = 0; rc == CUDA_SUCCESS; ++i) {
    rc = LaunchNs(f, us * 1000);
    if (i == 200) {
      std::printf("ready %d\n", rc);
      std::fflush(stdout);
    }
  }
  std::printf("ready %d\n", rc);
  return 1;
}

int Fill(int ordinal, uint64_t ms) {
  CUfunction f = nullptr;
  CUresult rc = SetUpContext(ordinal);
  if (rc == CUDA_SUCCESS) rc = GetKernel(&f);
  const long long t0 = NowUs();
  constexpr int kContextQueue = 4096;  // shared_layout.h
  for (int i = 0; i < kContextQueue && rc == CUDA_SUCCESS; ++i) rc = LaunchNs(f, ms * 1'000'000);
  const long long filled = NowUs();
  if (rc == CUDA_SUCCESS) rc = LaunchNs(f, ms * 1'000'000);
  std::printf("%d %lld %lld\n", rc, filled - t0, NowUs() - t0);
  return 0;
}

int Yield(uint64_t ms_a, uint64_t ms_b) {
  CUcontext a = nullptr, b = nullptr;
  CUfunction fa = nullptr, fb = nullptr;
  CUresult rc = cuInit(0);
  VgpuFakeKernelCursor cursor{};
  unsigned n = 0;
  if (rc == CUDA_SUCCESS)
    rc = static_cast<CUresult>(vgpuFakeTakeKernelRecords(&cursor, nullptr, 0, &n));
  if (rc == CUDA_SUCCESS) rc = cuCtxCreate_v2(&a, 0, 0);
  if (rc == CUDA_SUCCESS) rc = GetKernel(&fa);
  if (rc == CUDA_SUCCESS) rc = cuCtxCreate_v2(&b, 0, 0);
  if (rc == CUDA_SUCCESS) rc = GetKernel(&fb);
  if (rc == CUDA_SUCCESS) rc = cuCtxSetCurrent(a);
  if (rc == CUDA_SUCCESS) rc = LaunchNs(fa, ms_a * 1'000'000);
  if (rc == CUDA_SUCCESS) rc = cuCtxSetCurrent(b);
  if (rc == CUDA_SUCCESS) rc = LaunchNs(fb, ms_b * 1'000'000);
  if (rc == CUDA_SUCCESS) rc = cuCtxSynchronize();
  if (rc == CUDA_SUCCESS) rc = cuCtxSetCurrent(a);
  if (rc == CUDA_SUCCESS) rc = cuCtxSynchronize();
  VgpuFakeKernelRecord r[2]{};
  if (rc == CUDA_SUCCESS) rc = static_cast<CUresult>(vgpuFakeTakeKernelRecords(&cursor, r, 2, &n));
  if (rc == CUDA_SUCCESS && n != 2) rc = CUDA_ERROR_UNKNOWN;
  if (r[0].context_id > r[1].context_id) std::swap(r[0], r[1]);
  std::printf("%d %llu %llu %llu %llu\n", rc, r[0].start_ns, r[0].end_ns, r[1].start_ns,
              r[1].end_ns);
  return 0;
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
  if (cmd == "saturate" && argc == 4)
    return Saturate(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10));
  if (cmd == "fill" && argc == 4)
    return Fill(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10));
  if (cmd == "yield" && argc == 4)
    return Yield(std::strtoull(argv[2], nullptr, 10), std::strtoull(argv[3], nullptr, 10));
  if ((cmd == "alloc" || cmd == "busy" || cmd == "launch") && argc == 4) {
    const int ordinal = std::atoi(argv[2]);
    const unsigned long long amount = std::strtoull(argv[3], nullptr, 10);
    CUresult rc = SetUpContext(ordinal);
    if (rc == CUDA_SUCCESS && cmd == "alloc") {
      CUdeviceptr p = 0;
      rc = cuMemAlloc(&p, amount);
    } else if (rc == CUDA_SUCCESS) {
      CUfunction f = nullptr;
      rc = GetKernel(&f);
      if (rc == CUDA_SUCCESS) rc = LaunchNs(f, amount * 1'000'000ULL);
      if (rc == CUDA_SUCCESS && cmd == "busy") rc = cuCtxSynchronize();
    }
    std::printf("ready %d\n", rc);
    std::fflush(stdout);
    WaitForEof();
    return 0;
  }
  return Usage();
}
