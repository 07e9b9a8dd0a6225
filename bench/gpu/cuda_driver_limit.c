/* Real-GPU check through the CUDA driver API (run under `vgpu run --gpumem N`): allocates
 * `chunk` MiB blocks on several paths until refused, reports the error codes, holds the peak for
 * `hold` seconds (so the host's nvidia-smi can be read), frees, and checks the memory is reusable.
 * Output: key=value lines. Build: gcc -I/usr/local/cuda/include cuda_driver_limit.c -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXB 4096
static CUdeviceptr blocks[MAXB];

static int fill(size_t chunk, CUresult* last) {
  int n = 0;
  for (; n < MAXB; ++n) {
    *last = cuMemAlloc(&blocks[n], chunk);
    if (*last != CUDA_SUCCESS) break;
  }
  return n;
}

int main(int argc, char** argv) {
  const size_t chunk = (size_t)(argc > 1 ? atoi(argv[1]) : 256) << 20;
  const int hold = argc > 2 ? atoi(argv[2]) : 0;
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx)) {
    printf("error=init\n");
    return 1;
  }
  size_t f = 0, t = 0, total = 0;
  cuMemGetInfo(&f, &t);
  cuDeviceTotalMem(&total, dev);
  printf("pid=%d\nmeminfo_total_mib=%zu\nmeminfo_free_mib=%zu\ndevice_total_mib=%zu\n", getpid(),
         t >> 20, f >> 20, total >> 20);
  CUresult last;
  const int n = fill(chunk, &last);
  printf("alloc_blocks=%d\nalloc_mib=%zu\nalloc_last_error=%d\n", n, (n * chunk) >> 20, (int)last);
  /* Every other path refused too, with the same error, at the limit. */
  CUdeviceptr p;
  printf("managed_error=%d\n", (int)cuMemAllocManaged(&p, chunk, CU_MEM_ATTACH_GLOBAL));
  printf("async_error=%d\n", (int)cuMemAllocAsync(&p, chunk, NULL));
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof(prop));
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  CUmemGenericAllocationHandle h;
  printf("vmm_error=%d\n", (int)cuMemCreate(&h, (chunk + gran - 1) / gran * gran, &prop, 0));
  cuMemGetInfo(&f, &t);
  printf("meminfo_free_at_peak_mib=%zu\n", f >> 20);
  printf("PEAK\n");
  fflush(stdout);
  sleep(hold);
  for (int i = 0; i < n; ++i) cuMemFree(blocks[i]);
  const int again = fill(chunk, &last);
  printf("realloc_blocks=%d\n", again);
  for (int i = 0; i < again; ++i) cuMemFree(blocks[i]);
  printf("done=1\n");
  return 0;
}
