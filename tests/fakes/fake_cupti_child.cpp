// Helper process for the fake CUPTI tests: one tenant of a time-sliced GPU.
//   tenant <ordinal> <kernels> <ms>  enable CONCURRENT_KERNEL records (CLOCK_MONOTONIC timestamp
//                                    callback), queue <kernels> kernels of <ms> ms, print
//                                    "ready <rc>", synchronize, flush, print "records <n>" and one
//                                    "<start> <end>" line per record, then wait for EOF.

#include <cuda.h>
#include <cupti.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cupti_test_util.h"

using vgpu::fake::test::CuptiClient;

namespace {

int Tenant(int ordinal, int kernels, uint64_t ms) {
  CUcontext ctx = nullptr;
  CUmodule m = nullptr;
  CUfunction f = nullptr;
  int rc = cuptiActivityRegisterTimestampCallback(CuptiClient::Monotonic);
  if (rc == 0) rc = CuptiClient::Get().Register();
  if (rc == 0) rc = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (rc == 0) rc = cuInit(0);
  if (rc == 0) rc = cuDevicePrimaryCtxRetain(&ctx, ordinal);
  if (rc == 0) rc = cuCtxSetCurrent(ctx);
  if (rc == 0) rc = cuModuleLoadData(&m, "x");
  if (rc == 0) rc = cuModuleGetFunction(&f, m, "k");
  uint64_t ns = ms * 1'000'000;
  void* params[] = {&ns};
  for (int i = 0; i < kernels && rc == 0; ++i)
    rc = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
  std::printf("ready %d\n", rc);
  std::fflush(stdout);
  if (rc == 0) rc = cuCtxSynchronize();
  if (rc == 0) rc = cuptiActivityFlushAll(0);
  const auto records = CuptiClient::Get().Records();
  std::printf("records %zu\n", rc == 0 ? records.size() : 0);
  for (const auto& r : records) {
    std::printf("%llu %llu\n", static_cast<unsigned long long>(r.start),
                static_cast<unsigned long long>(r.end));
  }
  std::fflush(stdout);
  char buf[64];
  while (read(STDIN_FILENO, buf, sizeof buf) > 0) {
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "tenant") {
    return Tenant(std::atoi(argv[2]), std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 10));
  }
  std::fprintf(stderr, "usage: fake_cupti_child tenant <ordinal> <kernels> <ms>\n");
  return 2;
}
