// libvgpu overhead benchmark (real GPU): empty-kernel launch rate and 1 MiB cudaMalloc/cudaFree
// pair rate. Run natively and under `vgpu run --gpumem 4096` (bench/gpu/run_all.sh interleaves
// them and reports medians). Each run times several windows after a warm-up and reports the
// median window, so one scheduling hiccup of the host does not decide the result.
// Prints one line: "<mode> <ops per second>".
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__global__ void empty_kernel() {}

static double now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

enum { kWindows = 9 };

static double launch_window(int n) {
  const double t0 = now();
  for (int i = 0; i < n; ++i) empty_kernel<<<1, 1>>>();
  cudaDeviceSynchronize();
  return n / (now() - t0);
}

static double malloc_window(int n) {
  void* p;
  const double t0 = now();
  for (int i = 0; i < n; ++i) {
    cudaMalloc(&p, 1 << 20);
    cudaFree(p);
  }
  return n / (now() - t0);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "launch";
  const int is_launch = strcmp(mode, "launch") == 0;
  const int n = is_launch ? 50000 : 4000;
  cudaFree(0);  // create the context outside the timed region
  double rates[kWindows];
  (void)(is_launch ? launch_window(n / 10) : malloc_window(n / 10));  // warm-up
  for (int w = 0; w < kWindows; ++w) rates[w] = is_launch ? launch_window(n) : malloc_window(n);
  qsort(rates, kWindows, sizeof(double), compare);
  printf("%s %.0f\n", mode, rates[kWindows / 2]);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
