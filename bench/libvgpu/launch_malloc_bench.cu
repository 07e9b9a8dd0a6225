// libvgpu overhead benchmark (real GPU): empty-kernel launch rate and 1 MiB cudaMalloc/cudaFree
// pair rate. Run natively and under `vgpu run --gpumem 4096` (tests/gpu/run_all.sh interleaves
// them and reports medians). Prints one line: "<mode> <ops per second>".
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

__global__ void empty_kernel() {}

static double now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "launch";
  cudaFree(0);  // create the context outside the timed region
  if (strcmp(mode, "launch") == 0) {
    const int n = 200000;
    for (int i = 0; i < 1000; ++i) empty_kernel<<<1, 1>>>();
    cudaDeviceSynchronize();
    const double t0 = now();
    for (int i = 0; i < n; ++i) empty_kernel<<<1, 1>>>();
    cudaDeviceSynchronize();
    printf("launch %.0f\n", n / (now() - t0));
  } else {
    const int n = 20000;
    void* p;
    for (int i = 0; i < 200; ++i) {
      cudaMalloc(&p, 1 << 20);
      cudaFree(p);
    }
    const double t0 = now();
    for (int i = 0; i < n; ++i) {
      cudaMalloc(&p, 1 << 20);
      cudaFree(p);
    }
    printf("malloc %.0f\n", n / (now() - t0));
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
