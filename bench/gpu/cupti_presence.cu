// cupti_presence: does CUPTI cost a launch-bound loop when its kernel records are OFF?
// libvgpu's limited path keeps CUPTI's activity API initialized for the whole process (kernel
// records are switched on only in windows, docs/sm-limit.md), while its in-process paired probe
// (tests/libvgpu/support/paired_launch.c) runs both of its paths with CUPTI initialized. This
// times one process's empty-kernel loop (runtime launches, a sync every 200 launches, like the
// PyTorch launch loop of sm_workloads.py `small`) in blocks that cycle through
//   none      CUPTI not attached (before the first attach, and after each cuptiFinalize)
//   disabled  activity callbacks registered, CONCURRENT_KERNEL enabled once and disabled again
//   enabled   CONCURRENT_KERNEL on (records flowing)
// and prints ns per launch per state: median and quartiles over the cycles.
//   nvcc -O2 -std=c++17 cupti_presence.cu -lcupti -lcuda -o cupti_presence && ./cupti_presence
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <vector>

__global__ void empty() {}

static double now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}
static void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t) {
  free(buffer);
}

static void check(CUptiResult r, const char* what) {
  if (r != CUPTI_SUCCESS) {
    const char* s = nullptr;
    cuptiGetResultString(r, &s);
    fprintf(stderr, "%s: %s\n", what, s ? s : "?");
    exit(1);
  }
}

// ns per launch of `launches` launches, synchronising every 200.
static double block(int launches) {
  cudaDeviceSynchronize();
  const double t0 = now_ns();
  for (int i = 1; i <= launches; ++i) {
    empty<<<1, 32>>>();
    if (i % 200 == 0) cudaStreamSynchronize(nullptr);
  }
  cudaDeviceSynchronize();
  return (now_ns() - t0) / launches;
}

static void summary(const char* name, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  printf("%-9s cycles=%zu median=%.0f q1=%.0f q3=%.0f ns/launch\n", name, n, v[n / 2], v[n / 4],
         v[(3 * n) / 4]);
}

int main(int argc, char** argv) {
  const int cycles = argc > 1 ? atoi(argv[1]) : 15;
  const int launches = argc > 2 ? atoi(argv[2]) : 40000;
  cudaFree(nullptr);
  block(launches);  // warm-up
  std::vector<double> none, disabled, enabled, none_paired_delta, disabled_paired_delta;
  for (int c = 0; c < cycles; ++c) {
    const double a = block(launches);
    check(cuptiActivityRegisterCallbacks(requested, completed), "register");
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable");
    check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "disable");
    const double b = block(launches);
    check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable");
    const double e = block(launches);
    check(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "disable");
    check(cuptiActivityFlushAll(0), "flush");
    const double b2 = block(launches);
    check(cuptiFinalize(), "finalize");
    const double a2 = block(launches);
    none.push_back(a);
    none.push_back(a2);
    disabled.push_back(b);
    disabled.push_back(b2);
    enabled.push_back(e);
    // Paired within the cycle: disabled against the mean of the two none blocks around it.
    disabled_paired_delta.push_back((b + b2) / 2 - (a + a2) / 2);
    none_paired_delta.push_back(a2 - a);
    printf("cycle %d: none %.0f disabled %.0f enabled %.0f disabled %.0f none %.0f\n", c, a, b, e,
           b2, a2);
  }
  summary("none", none);
  summary("disabled", disabled);
  summary("enabled", enabled);
  summary("d-n pair", disabled_paired_delta);
  summary("n-n (A/A)", none_paired_delta);
  return 0;
}
