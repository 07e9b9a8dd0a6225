/* One process of a container for tests/gpu/exit_race.sh: under libvgpu (LD_PRELOAD, a shared
 * region), allocates `chunk` MiB blocks until refused or until it holds `max` of them, writes
 * every block (so the memory is really taken), and exits at once without freeing: the driver frees
 * it as the process ends, which is what the race was about (issue 42, item 8).
 * Output: one line, "held <blocks> rc=<CUresult of the refusal or 0>", or "context refused rc=<..>"
 * when the library refused the context itself (the container was at its limit).
 * Build: gcc -O2 -I/usr/local/cuda/include exit_race_worker.c -lcuda (or nvcc). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const size_t chunk = (size_t)(argc > 1 ? atoi(argv[1]) : 256) << 20;
  const int max = argc > 2 ? atoi(argv[2]) : 1 << 20;
  CUdevice dev;
  CUcontext ctx;
  CUresult rc = cuInit(0);
  if (rc == CUDA_SUCCESS) rc = cuDeviceGet(&dev, 0);
  if (rc == CUDA_SUCCESS) rc = cuDevicePrimaryCtxRetain(&ctx, dev);
  if (rc != CUDA_SUCCESS) { /* a context refused at the limit is the library doing its job */
    printf("context refused rc=%d\n", (int)rc);
    return 0;
  }
  cuCtxSetCurrent(ctx);
  int held = 0;
  rc = CUDA_SUCCESS;
  while (held < max) {
    CUdeviceptr p;
    rc = cuMemAlloc(&p, chunk);
    if (rc != CUDA_SUCCESS) break;
    cuMemsetD8(p, 0x5a, chunk);
    ++held;
  }
  cuCtxSynchronize();
  printf("held %d rc=%d\n", held, held < max ? (int)rc : 0);
  fflush(stdout);
  return 0; /* exit with everything still allocated */
}
