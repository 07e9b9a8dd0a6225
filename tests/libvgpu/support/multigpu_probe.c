/* libvgpu_multigpu_probe: libvgpu.so (preloaded) with several simulated GPUs. Prints one line per
 * fact for tests/libvgpu/multigpu_test.cpp to check; "FAIL ..." and exit 1 on the first broken
 * expectation of its own.
 *   limits CHUNK  per CUDA ordinal: its UUID, the totals the CUDA and NVML views show, how many
 *                 CHUNK-byte blocks it grants before CUDA_ERROR_OUT_OF_MEMORY, the region's count
 *   peer CHUNK    peer access and peer copies between ordinals 0 and 1 with the usage unchanged */
#define _GNU_SOURCE
#include <cuda.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nvml_types.h"
#include "vgpu/region_layout.h"

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char*, nvmlDevice_t*);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*);

#define MAX_BLOCKS 4096
#define CHECK(cond, ...)                          \
  do {                                            \
    if (!(cond)) {                                \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf("\n");                               \
      fflush(stdout);                             \
      exit(1);                                    \
    }                                             \
  } while (0)
#define CU(call)                                                   \
  do {                                                             \
    CUresult rc_ = (call);                                         \
    CHECK(rc_ == CUDA_SUCCESS, "%s returned %d", #call, (int)rc_); \
  } while (0)

static const struct vgpu_region* g_region;

static void map_region(void) {
  const char* path = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
  CHECK(path != NULL, "CUDA_DEVICE_MEMORY_SHARED_CACHE not set");
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0, "cannot open the region %s", path);
  void* p = mmap(NULL, sizeof(struct vgpu_region), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  CHECK(p != MAP_FAILED, "cannot map the region");
  g_region = p;
}

static void uuid_of(CUdevice dev, char* out, size_t size) {
  CUuuid u;
  CU(cuDeviceGetUuid(&u, dev));
  const unsigned char* b = (const unsigned char*)u.bytes;
  snprintf(out, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

/* The region's usage of the GPU named `uuid` (records are keyed by UUID). */
static uint64_t region_used(const char* uuid) {
  const uint32_t n = __atomic_load_n(&g_region->header.device_count, __ATOMIC_ACQUIRE);
  for (uint32_t d = 0; d < n; ++d) {
    if (strcmp(g_region->devices[d].uuid, uuid) == 0) {
      return __atomic_load_n(&g_region->devices[d].mem_used, __ATOMIC_ACQUIRE);
    }
  }
  return UINT64_MAX;
}

static CUcontext primary(CUdevice dev) {
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  return ctx;
}

static size_t free_now(void) {
  size_t f = 0, t = 0;
  CU(cuMemGetInfo(&f, &t));
  return f;
}

static int cmd_limits(uint64_t chunk) {
  CU(cuInit(0));
  CHECK(nvmlInit_v2() == NVML_SUCCESS, "nvmlInit");
  map_region();
  int count = 0;
  CU(cuDeviceGetCount(&count));
  printf("count %d\n", count);
  static CUdeviceptr blocks[MAX_BLOCKS];
  for (int d = 0; d < count; ++d) {
    CUdevice dev;
    CU(cuDeviceGet(&dev, d));
    CUcontext ctx = primary(dev);
    char uuid[64];
    uuid_of(dev, uuid, sizeof uuid);
    size_t total_mem = 0, f = 0, t = 0;
    CU(cuDeviceTotalMem(&total_mem, dev));
    CU(cuMemGetInfo(&f, &t));
    int n = 0;
    for (;;) {
      CHECK(n < MAX_BLOCKS, "more than %d blocks granted", MAX_BLOCKS);
      const CUresult rc = cuMemAlloc(&blocks[n], chunk);
      if (rc == CUDA_ERROR_OUT_OF_MEMORY) break;
      CHECK(rc == CUDA_SUCCESS, "alloc on %d returned %d", d, (int)rc);
      ++n;
    }
    nvmlDevice_t h;
    nvmlMemory_t m;
    CHECK(nvmlDeviceGetHandleByUUID(uuid, &h) == NVML_SUCCESS, "NVML handle of %s", uuid);
    CHECK(nvmlDeviceGetMemoryInfo(h, &m) == NVML_SUCCESS, "NVML memory of %s", uuid);
    printf(
        "dev %d uuid %s total %zu meminfo %zu grabbed %d region %llu nvml_total %llu nvml_used "
        "%llu\n",
        d, uuid, total_mem, t, n, (unsigned long long)region_used(uuid),
        (unsigned long long)m.total, (unsigned long long)m.used);
    for (int i = 0; i < n; ++i) CU(cuMemFree(blocks[i]));
    CHECK(region_used(uuid) == 0, "device %d still counts %llu after the frees", d,
          (unsigned long long)region_used(uuid));
    (void)ctx;
  }
  return 0;
}

static int cmd_peer(uint64_t chunk) {
  CU(cuInit(0));
  map_region();
  int count = 0;
  CU(cuDeviceGetCount(&count));
  CHECK(count >= 2, "need 2 devices, have %d", count);
  CUdevice d0, d1;
  CU(cuDeviceGet(&d0, 0));
  CU(cuDeviceGet(&d1, 1));
  char u0[64], u1[64];
  uuid_of(d0, u0, sizeof u0);
  uuid_of(d1, u1, sizeof u1);
  CUcontext c1 = primary(d1);
  CUdeviceptr b;
  CU(cuMemAlloc(&b, chunk));
  CUcontext c0 = primary(d0);
  CUdeviceptr a;
  CU(cuMemAlloc(&a, chunk));
  const uint64_t used0 = region_used(u0), used1 = region_used(u1);
  CHECK(used0 == chunk && used1 == chunk, "after one block each: %llu %llu",
        (unsigned long long)used0, (unsigned long long)used1);
  const size_t free0 = free_now();

  int can01 = -1, can10 = -1;
  CU(cuDeviceCanAccessPeer(&can01, d0, d1));
  CU(cuDeviceCanAccessPeer(&can10, d1, d0));
  printf("can_access %d %d\n", can01, can10);
  if (can01) {
    CU(cuCtxEnablePeerAccess(c1, 0)); /* current: c0 */
    CHECK(cuCtxEnablePeerAccess(c1, 0) == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "enable twice");
  } else {
    CHECK(cuCtxEnablePeerAccess(c1, 0) == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "enable unsupported");
  }
  /* Peer copies work with or without peer access (the driver stages them). */
  CU(cuMemcpyPeer(a, c0, b, c1, chunk));
  CU(cuMemcpyPeerAsync(b, c1, a, c0, chunk, NULL));
  CU(cuCtxSynchronize());
  CU(cuMemcpyDtoD(b, a, chunk)); /* unified addressing: a plain copy across GPUs */
  CHECK(cuMemcpyPeer(a, c0, b, c1, chunk + 1) == CUDA_ERROR_INVALID_VALUE, "overlong peer copy");
  CHECK(cuMemcpyPeer(b, c0, a, c1, chunk) == CUDA_ERROR_INVALID_VALUE, "swapped contexts");
  /* Through cuGetProcAddress (passed through by libvgpu: copies cost no memory). */
  void* fn = NULL;
  CUdriverProcAddressQueryResult found;
  CU(cuGetProcAddress_v2("cuMemcpyPeer", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &found));
  CHECK(fn != NULL && found == CU_GET_PROC_ADDRESS_SUCCESS, "cuGetProcAddress(cuMemcpyPeer)");
  CU(((CUresult(*)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t))fn)(b, c1, a, c0,
                                                                               chunk));
  CHECK(region_used(u0) == used0 && region_used(u1) == used1, "copies changed usage: %llu %llu",
        (unsigned long long)region_used(u0), (unsigned long long)region_used(u1));
  CHECK(free_now() == free0, "free memory of device 0 moved: %zu -> %zu", free0, free_now());

  /* With access to c1 enabled, allocations in c0 still count on device 0 only, and freeing
   * device 1's block from device 0's context releases device 1. */
  CUdeviceptr a2;
  CU(cuMemAlloc(&a2, chunk));
  CHECK(region_used(u0) == used0 + chunk && region_used(u1) == used1, "alloc in c0: %llu %llu",
        (unsigned long long)region_used(u0), (unsigned long long)region_used(u1));
  CU(cuMemFree(b));
  CHECK(region_used(u1) == 0, "free of device 1's block from c0 left %llu",
        (unsigned long long)region_used(u1));
  if (can01) {
    CU(cuCtxDisablePeerAccess(c1));
    CHECK(cuCtxDisablePeerAccess(c1) == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "disable twice");
  }
  CU(cuMemFree(a));
  CU(cuMemFree(a2));
  CHECK(region_used(u0) == 0, "device 0 left %llu", (unsigned long long)region_used(u0));
  printf("peer ok\n");
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 3) {
    fprintf(stderr, "usage: libvgpu_multigpu_probe limits|peer CHUNK\n");
    return 2;
  }
  const uint64_t chunk = strtoull(argv[2], NULL, 0);
  if (strcmp(argv[1], "limits") == 0) return cmd_limits(chunk);
  if (strcmp(argv[1], "peer") == 0) return cmd_peer(chunk);
  fprintf(stderr, "unknown command %s\n", argv[1]);
  return 2;
}
