// Cost of the SM limiter's launch path on a real GPU: empty-kernel launches per second (the limit
// set but not binding shows the limiter's own per-launch cost), and the cost of each driver call
// that the limited path may make (run it natively for those).
//
//   nvcc -O2 -o limited_launch_cost bench/libvgpu/limited_launch_cost.cu -lcuda
//   ./limited_launch_cost calls          # ns per driver call
//   ./limited_launch_cost launches N     # median launches/s of 7 bursts of N launches
//   ./limited_launch_cost events K Q     # the same with an event recorded every K launches and
//                                        # the oldest queried every Q launches (the limiter's
//                                        # driver traffic, without the limiter)
#include <cuda.h>
#include <cuda_runtime.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

__global__ void empty_kernel() {}

static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename F>
static double ns_per_call(F f, int n) {
  double t0 = now_s();
  for (int i = 0; i < n; ++i) f();
  return (now_s() - t0) * 1e9 / n;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "launches";
  cudaFree(nullptr);
  empty_kernel<<<1, 1>>>();
  cudaDeviceSynchronize();
  if (strcmp(mode, "calls") == 0) {
    CUstream s = nullptr;
    CUdevice d;
    CUstreamCaptureStatus st;
    CUevent ev;
    cuEventCreate(&ev, CU_EVENT_DEFAULT);
    cuEventRecord(ev, s);
    cuCtxSynchronize();
    const int n = 200000;
    printf("cuCtxGetDevice        %.0f ns\n", ns_per_call([&] { cuCtxGetDevice(&d); }, n));
    timespec ts{};
    printf("clock_gettime         %.0f ns\n",
           ns_per_call([&] { clock_gettime(CLOCK_MONOTONIC, &ts); }, n));
    printf("cuStreamIsCapturing   %.0f ns\n", ns_per_call([&] { cuStreamIsCapturing(s, &st); }, n));
    printf("cuEventQuery (done)   %.0f ns\n", ns_per_call([&] { cuEventQuery(ev); }, n));
    printf("launch (no sync)      %.0f ns\n", ns_per_call([&] { empty_kernel<<<1, 1>>>(); }, n));
    cudaDeviceSynchronize();
    printf("cuEventRecord+launch  %.0f ns\n", ns_per_call(
                                                  [&] {
                                                    empty_kernel<<<1, 1>>>();
                                                    cuEventRecord(ev, s);
                                                  },
                                                  n));
    cudaDeviceSynchronize();
    printf("launch+cuEventQuery   %.0f ns\n", ns_per_call(
                                                  [&] {
                                                    empty_kernel<<<1, 1>>>();
                                                    cuEventQuery(ev);
                                                  },
                                                  n));
    cudaDeviceSynchronize();
    return 0;
  }
  const bool with_events = strcmp(mode, "events") == 0;
  const int n = with_events ? 50000 : (argc > 2 ? atoi(argv[2]) : 50000);
  const int record_every = with_events && argc > 2 ? atoi(argv[2]) : 0;
  const int query_every = with_events && argc > 3 ? atoi(argv[3]) : 0;
  CUevent ring[8];
  for (CUevent& e : ring) cuEventCreate(&e, CU_EVENT_DEFAULT);
  std::vector<double> rates;
  for (int r = 0; r < 7; ++r) {
    int recorded = 0;
    double t0 = now_s();
    for (int i = 1; i <= n; ++i) {
      empty_kernel<<<1, 1>>>();
      if (record_every > 0 && i % record_every == 0) cuEventRecord(ring[recorded++ % 8], nullptr);
      if (query_every > 0 && i % query_every == 0 && recorded > 0)
        cuEventQuery(ring[(recorded + 7) % 8]);
    }
    cudaDeviceSynchronize();
    rates.push_back(n / (now_s() - t0));
  }
  std::sort(rates.begin(), rates.end());
  printf("{\"launches_per_s\": %.0f}\n", rates[3]);
  return 0;
}
