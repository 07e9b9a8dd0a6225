/* paired_launch: what libvgpu's launch hook costs, measured inside one process.
 *
 * Launch overhead measured across processes is at the mercy of the host: on the GPU machines,
 * runs of the same native program spread by ±10-25 %, more than the 2 % to be resolved. Here one
 * process launches an empty kernel through two entry points in alternating blocks: `hooked`, the
 * cuLaunchKernel the program links against (libvgpu's hook when the library is preloaded), and
 * `direct`, the driver's own cuLaunchKernel, looked up past libvgpu's dlsym. Both blocks end with
 * the driver's own cuCtxSynchronize, so that only the launch path differs. The order inside a
 * pair alternates, and the overhead is the median over pairs of hooked/direct - 1: drift of the
 * host over seconds cancels out of every pair.
 *
 *   paired_launch [LAUNCHES_PER_BLOCK [PAIRS]]      (defaults 2000, 300)
 *
 * Prints one JSON line. Without libvgpu both entry points are the same function
 * ("hooked_is_direct": true) and the overhead measures the method's own noise. Built against the
 * fake driver for the tests; on a GPU machine: gcc -O2 -I/usr/local/cuda/include paired_launch.c
 * -lcuda -ldl. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
typedef CUresult (*sync_fn)(void);
typedef void* (*dlsym_fn)(void*, const char*);

static const char kEmptyKernelPtx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry empty()\n"
    "{\n"
    "  ret;\n"
    "}\n";

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The q-quantile of v[0..n) (sorted in place). */
static double quantile(double* v, int n, double q) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  int i = (int)(q * (n - 1) + 0.5);
  return v[i];
}

static int fail(const char* what, CUresult rc) {
  printf("{\"error\": \"%s failed: %d\"}\n", what, (int)rc);
  return 1;
}

/* ns per launch of one block: `n` launches, then the driver's own synchronisation. */
static double time_block(launch_fn launch, sync_fn sync, CUfunction f, int n, CUresult* rc) {
  double t0 = now_ns();
  for (int i = 0; i < n; ++i) {
    CUresult r = launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    if (r != CUDA_SUCCESS) *rc = r;
  }
  CUresult r = sync();
  if (r != CUDA_SUCCESS) *rc = r;
  return (now_ns() - t0) / n;
}

int main(int argc, char** argv) {
  int block = argc > 1 ? atoi(argv[1]) : 2000;
  int pairs = argc > 2 ? atoi(argv[2]) : 300;
  if (block <= 0 || pairs <= 0) {
    fprintf(stderr, "usage: paired_launch [LAUNCHES_PER_BLOCK [PAIRS]] (positive numbers)\n");
    return 2;
  }
  CUresult rc = cuInit(0);
  if (rc != CUDA_SUCCESS) return fail("cuInit", rc);
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction f;
  if ((rc = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS) return fail("cuDeviceGet", rc);
  if ((rc = cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS)
    return fail("cuDevicePrimaryCtxRetain", rc);
  if ((rc = cuCtxSetCurrent(ctx)) != CUDA_SUCCESS) return fail("cuCtxSetCurrent", rc);
  if ((rc = cuModuleLoadData(&mod, kEmptyKernelPtx)) != CUDA_SUCCESS)
    return fail("cuModuleLoadData", rc);
  if ((rc = cuModuleGetFunction(&f, mod, "empty")) != CUDA_SUCCESS)
    return fail("cuModuleGetFunction", rc);

  /* glibc's own dlsym (libvgpu exports an unversioned dlsym that would hand back its hook). */
  dlsym_fn real_dlsym = (dlsym_fn)dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5");
  if (real_dlsym == NULL) real_dlsym = (dlsym_fn)dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (real_dlsym == NULL || driver == NULL) return fail("looking up the driver", CUDA_SUCCESS);
  launch_fn hooked = cuLaunchKernel;
  launch_fn direct = (launch_fn)real_dlsym(driver, "cuLaunchKernel");
  sync_fn sync = (sync_fn)real_dlsym(driver, "cuCtxSynchronize");
  if (direct == NULL || sync == NULL)
    return fail("dlsym of the driver's entry points", CUDA_SUCCESS);

  CUresult launch_rc = CUDA_SUCCESS;
  for (int i = 0; i < 5; ++i) { /* warm-up: module load, queues, the limiter's first events */
    time_block(hooked, sync, f, block, &launch_rc);
    time_block(direct, sync, f, block, &launch_rc);
  }
  double* h = calloc((size_t)pairs, sizeof(double));
  double* d = calloc((size_t)pairs, sizeof(double));
  double* over = calloc((size_t)pairs, sizeof(double));
  if (h == NULL || d == NULL || over == NULL) return fail("calloc", CUDA_SUCCESS);
  for (int p = 0; p < pairs; ++p) {
    if (p % 2 == 0) {
      h[p] = time_block(hooked, sync, f, block, &launch_rc);
      d[p] = time_block(direct, sync, f, block, &launch_rc);
    } else {
      d[p] = time_block(direct, sync, f, block, &launch_rc);
      h[p] = time_block(hooked, sync, f, block, &launch_rc);
    }
    over[p] = 100.0 * (h[p] / d[p] - 1.0);
  }
  if (launch_rc != CUDA_SUCCESS) return fail("a launch or synchronisation", launch_rc);
  double over_p25 = quantile(over, pairs, 0.25);
  double over_p75 = quantile(over, pairs, 0.75);
  double over_med = quantile(over, pairs, 0.5);
  double h_med = quantile(h, pairs, 0.5);
  double d_med = quantile(d, pairs, 0.5);
  printf(
      "{\"block\": %d, \"pairs\": %d, \"hooked_is_direct\": %s, \"hooked_ns\": %.1f, "
      "\"direct_ns\": %.1f, \"overhead_pct\": %.3f, \"overhead_p25\": %.3f, "
      "\"overhead_p75\": %.3f, \"medians_pct\": %.3f}\n",
      block, pairs, hooked == direct ? "true" : "false", h_med, d_med, over_med, over_p25, over_p75,
      100.0 * (h_med / d_med - 1.0));
  free(h);
  free(d);
  free(over);
  return 0;
}
