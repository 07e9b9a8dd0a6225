/* libvgpu_probe: exercises libvgpu.so (preloaded) through the CUDA driver API and NVML, and checks
 * the shared region's counters. One subcommand per scenario; prints "FAIL ..." and exits 1 on the
 * first broken expectation, exits 0 otherwise. Driven by tests/libvgpu/integration_test.cpp. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nvml_types.h"
#include "vgpu/region_layout.h"

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned, nvmlDevice_t*);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t*);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, nvmlMemory_v2_t*);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t, unsigned*,
                                                     nvmlProcessInfo_v2_t*);

#define MiB (1ull << 20)
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
  if (fd < 0) return; /* scenarios with an unusable region do not read it */
  void* p = mmap(NULL, sizeof(struct vgpu_region), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p != MAP_FAILED) g_region = p;
}

static uint64_t device_used(int d) {
  return __atomic_load_n(&g_region->devices[d].mem_used, __ATOMIC_ACQUIRE);
}

/* Bytes of tracked allocations in this process's slot on record d. */
static uint64_t my_tracked(int d) {
  for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) {
    if (__atomic_load_n(&g_region->procs[s].pid, __ATOMIC_ACQUIRE) == (int)getpid()) {
      return __atomic_load_n(&g_region->procs[s].mem_used[d], __ATOMIC_ACQUIRE);
    }
  }
  return UINT64_MAX;
}

/* File name without its directories (build directories may be named after libvgpu). */
static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash != NULL ? slash + 1 : path;
}

static CUcontext g_ctx;
static void make_context(void) {
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  CU(cuCtxSetCurrent(g_ctx));
  map_region();
}

/* The fake driver's kernel "k" (its first parameter is its duration in ns), from a loaded module.
 */
static CUfunction fake_kernel(CUmodule* mod) {
  CUfunction f;
  CU(cuModuleLoadData(mod, "fake image"));
  CU(cuModuleGetFunction(&f, *mod, "k"));
  return f;
}

/* ---- allocation paths ---------------------------------------------------------------------- */

enum {
  P_ALLOC,
  P_PITCH,
  P_MANAGED,
  P_VMM,
  P_ASYNC,
  P_POOL,
  P_ARRAY,
  P_ARRAY3D,
  P_MIPMAP,
  P_GRAPH,
  P_COUNT
};
static const char* const kPathNames[] = {"alloc", "pitch", "managed", "vmm",    "async",
                                         "pool",  "array", "array3d", "mipmap", "graph"};

struct held {
  int path;
  CUdeviceptr ptr;
  CUmemGenericAllocationHandle handle;
  CUarray array;
  CUmipmappedArray mipmap;
  CUgraph graph;
  uint64_t expected; /* bytes the region must count */
};

/* Allocates about `bytes` on `path`; returns the CUresult. */
static CUresult alloc_path(int path, uint64_t bytes, struct held* h) {
  memset(h, 0, sizeof(*h));
  h->path = path;
  h->expected = bytes;
  switch (path) {
    case P_ALLOC:
      return cuMemAlloc(&h->ptr, bytes);
    case P_PITCH: {
      size_t pitch = 0;
      const size_t height = 16;
      CUresult rc = cuMemAllocPitch(&h->ptr, &pitch, bytes / height - 3, height, 4);
      h->expected = (uint64_t)pitch * height; /* actual pitch x height */
      return rc;
    }
    case P_MANAGED:
      return cuMemAllocManaged(&h->ptr, bytes, CU_MEM_ATTACH_GLOBAL);
    case P_VMM: {
      CUmemAllocationProp prop;
      memset(&prop, 0, sizeof(prop));
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = 0;
      return cuMemCreate(&h->handle, bytes, &prop, 0);
    }
    case P_ASYNC:
      return cuMemAllocAsync(&h->ptr, bytes, NULL);
    case P_POOL: {
      CUmemoryPool pool;
      CUresult rc = cuDeviceGetDefaultMemPool(&pool, 0);
      if (rc != CUDA_SUCCESS) return rc;
      return cuMemAllocFromPoolAsync(&h->ptr, bytes, pool, NULL);
    }
    case P_ARRAY: {
      CUDA_ARRAY_DESCRIPTOR d = {
          .Width = bytes / 4 / 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
      CUresult rc = cuArrayCreate(&h->array, &d);
      if (rc == CUDA_SUCCESS) {
        CUDA_ARRAY_MEMORY_REQUIREMENTS req;
        CU(cuArrayGetMemoryRequirements(&req, h->array, 0));
        h->expected = req.size; /* the driver's number */
      }
      return rc;
    }
    case P_ARRAY3D: {
      CUDA_ARRAY3D_DESCRIPTOR d = {.Width = bytes / 4 / 16 / 4,
                                   .Height = 16,
                                   .Depth = 4,
                                   .Format = CU_AD_FORMAT_FLOAT,
                                   .NumChannels = 1};
      CUresult rc = cuArray3DCreate(&h->array, &d);
      if (rc == CUDA_SUCCESS) {
        CUDA_ARRAY_MEMORY_REQUIREMENTS req;
        CU(cuArrayGetMemoryRequirements(&req, h->array, 0));
        h->expected = req.size;
      }
      return rc;
    }
    case P_MIPMAP: {
      CUDA_ARRAY3D_DESCRIPTOR d = {.Width = bytes / 4 / 64,
                                   .Height = 64,
                                   .Depth = 0,
                                   .Format = CU_AD_FORMAT_FLOAT,
                                   .NumChannels = 1};
      h->expected = UINT64_MAX; /* driver-reported or estimated: checked as > 0 */
      return cuMipmappedArrayCreate(&h->mipmap, &d, 1);
    }
    case P_GRAPH: {
      CU(cuGraphCreate(&h->graph, 0));
      CUDA_MEM_ALLOC_NODE_PARAMS p;
      memset(&p, 0, sizeof(p));
      p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
      p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      p.poolProps.location.id = 0;
      p.bytesize = bytes;
      CUgraphNode node;
      CUresult rc = cuGraphAddMemAllocNode(&node, h->graph, NULL, 0, &p);
      h->ptr = p.dptr;
      if (rc != CUDA_SUCCESS) cuGraphDestroy(h->graph);
      return rc;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

static void free_path(struct held* h) {
  switch (h->path) {
    case P_ALLOC:
    case P_PITCH:
    case P_MANAGED:
      CU(cuMemFree(h->ptr));
      break;
    case P_VMM:
      CU(cuMemRelease(h->handle));
      break;
    case P_ASYNC:
    case P_POOL:
      CU(cuMemFreeAsync(h->ptr, NULL));
      CU(cuStreamSynchronize(NULL));
      break;
    case P_ARRAY:
    case P_ARRAY3D:
      CU(cuArrayDestroy(h->array));
      break;
    case P_MIPMAP:
      CU(cuMipmappedArrayDestroy(h->mipmap));
      break;
    case P_GRAPH: {
      CUgraphNode node;
      CU(cuGraphAddMemFreeNode(&node, h->graph, NULL, 0, h->ptr));
      CU(cuGraphDestroy(h->graph));
      break;
    }
  }
}

/* Every path counts exactly what it allocated and releases it exactly. */
static int cmd_paths(void) {
  make_context();
  const uint64_t base = my_tracked(0);
  CHECK(base == 0, "tracked %llu before any allocation", (unsigned long long)base);
  for (int p = 0; p < P_COUNT; ++p) {
    struct held h;
    const uint64_t before_total = device_used(0);
    CU(alloc_path(p, 8 * MiB, &h));
    const uint64_t counted = my_tracked(0);
    if (h.expected == UINT64_MAX) {
      CHECK(counted >= 8 * MiB, "%s counted %llu", kPathNames[p], (unsigned long long)counted);
    } else {
      CHECK(counted == h.expected, "%s counted %llu, allocated %llu", kPathNames[p],
            (unsigned long long)counted, (unsigned long long)h.expected);
    }
    CHECK(device_used(0) >= before_total + counted, "%s: device total not raised", kPathNames[p]);
    free_path(&h);
    CHECK(my_tracked(0) == 0, "%s left %llu counted after free", kPathNames[p],
          (unsigned long long)my_tracked(0));
    printf("ok %s %llu\n", kPathNames[p], (unsigned long long)counted);
  }
  /* Freeing memory we never tracked still frees it (and changes nothing). */
  CHECK(cuMemFree((CUdeviceptr)0x1234) != CUDA_SUCCESS, "bogus free succeeded");
  return 0;
}

/* Allocation stops at the limit on every path with CUDA_ERROR_OUT_OF_MEMORY. */
static int cmd_boundary(void) {
  make_context();
  const uint64_t limit = g_region->devices[0].mem_limit;
  CHECK(limit != 0, "no limit set");
  const uint64_t room = limit - device_used(0); /* the context's own memory is counted too */
  CUdeviceptr fill;
  CHECK(cuMemAlloc(&fill, room + 1) == CUDA_ERROR_OUT_OF_MEMORY, "one byte over was admitted");
  CU(cuMemAlloc(&fill, room)); /* exactly at the limit */
  for (int p = 0; p < P_COUNT; ++p) {
    struct held h;
    const CUresult rc = alloc_path(p, 4 * MiB, &h);
    CHECK(rc == CUDA_ERROR_OUT_OF_MEMORY, "%s at the limit returned %d", kPathNames[p], (int)rc);
  }
  CHECK(device_used(0) == limit, "refusals changed the count: %llu",
        (unsigned long long)device_used(0));
  CU(cuMemFree(fill));
  /* After freeing, memory is reusable on every path. */
  for (int p = 0; p < P_COUNT; ++p) {
    struct held h;
    CU(alloc_path(p, 4 * MiB, &h));
    free_path(&h);
  }
  size_t free_b = 0, total_b = 0;
  CU(cuMemGetInfo(&free_b, &total_b));
  CHECK(total_b == limit, "cuMemGetInfo total %zu, limit %llu", total_b, (unsigned long long)limit);
  CHECK(free_b == limit - device_used(0), "cuMemGetInfo free %zu", free_b);
  printf("ok boundary limit=%llu\n", (unsigned long long)limit);
  return 0;
}

/* Grabs `chunk`-byte blocks until refused, reports how many, then holds them until stdin closes. A
 * context the limit refuses (CUDA_ERROR_OUT_OF_MEMORY, as on a full card) is "context refused",
 * then "grabbed 0". PROBE_MODULE=1: loads a module (the fake's module memory, which nothing admits)
 * after the context. PROBE_GRAB_MAX: stops after that many blocks. */
static int cmd_grab(uint64_t chunk) {
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  const CUresult ctx_rc = cuDevicePrimaryCtxRetain(&g_ctx, dev);
  int n = 0;
  if (ctx_rc == CUDA_ERROR_OUT_OF_MEMORY) {
    printf("context refused\n");
  } else {
    CHECK(ctx_rc == CUDA_SUCCESS, "cuDevicePrimaryCtxRetain returned %d", (int)ctx_rc);
    CU(cuCtxSetCurrent(g_ctx));
    map_region();
    if (getenv("PROBE_MODULE") != NULL) {
      CUmodule mod;
      CU(cuModuleLoadData(&mod, "fake image"));
    }
    const char* max_text = getenv("PROBE_GRAB_MAX");
    const int max = max_text != NULL ? atoi(max_text) : -1;
    CUdeviceptr p;
    while (max < 0 || n < max) {
      const CUresult rc = cuMemAlloc(&p, chunk);
      if (rc == CUDA_ERROR_OUT_OF_MEMORY) break;
      CHECK(rc == CUDA_SUCCESS, "alloc returned %d", (int)rc);
      ++n;
    }
  }
  printf("grabbed %d\n", n);
  fflush(stdout);
  char buf[16];
  while (read(0, buf, sizeof(buf)) > 0) {
  }
  return 0;
}

/* Allocates and frees random sizes forever (to be SIGKILLed). */
__attribute__((noreturn)) static int cmd_churn(void) {
  make_context();
  printf("ready\n");
  fflush(stdout);
  CUdeviceptr live[8] = {0};
  for (unsigned i = 1;; ++i) {
    const unsigned k = i % 8;
    if (live[k] != 0) {
      cuMemFree(live[k]);
      live[k] = 0;
    } else {
      cuMemAlloc(&live[k], (i * 7919u) % (4 * MiB) + 1);
    }
  }
}

/* Prints the device total as a fresh process sees it (it reaps dead processes first). */
static int cmd_usage(void) {
  CU(cuInit(0));
  map_region();
  size_t f = 0, t = 0;
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU(cuCtxCreate(&ctx, NULL, 0, dev)); /* contexts cost no memory in this scenario */
  CUdeviceptr p;
  CU(cuMemAlloc(&p, 1)); /* admission path: reaps with a full check before refusing */
  CU(cuMemFree(p));
  CU(cuMemGetInfo(&f, &t));
  int slots = 0;
  for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) slots += g_region->procs[s].pid != 0;
  printf("used %llu slots %d\n", (unsigned long long)device_used(0), slots);
  return 0;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Time of the first CUDA calls of a process: cuInit (region attach, slot claim) + an alloc. */
static int cmd_init(void) {
  const uint64_t t0 = now_ns();
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CUdeviceptr p;
  CU(cuMemAlloc(&p, MiB));
  const uint64_t t1 = now_ns();
  CU(cuMemFree(p));
  /* PROBE_T0_NS: the parent's CLOCK_MONOTONIC just before it started us, so that exec, the dynamic
   * loader and the library's load count too. */
  const char* spawned = getenv("PROBE_T0_NS");
  if (spawned != NULL) {
    printf("init_ns %llu exec_ns %llu\n", (unsigned long long)(t1 - t0),
           (unsigned long long)(t1 - strtoull(spawned, NULL, 10)));
  } else {
    printf("init_ns %llu\n", (unsigned long long)(t1 - t0));
  }
  return 0;
}

/* A worker of the SIGKILL storm (tests/libvgpu/fault_test.cpp): allocations, frees and kernel
 * launches in a loop until it is killed. Prints "ready" once its context, module and first
 * allocation exist. */
__attribute__((noreturn)) static int cmd_storm(void) {
  make_context();
  CUmodule mod;
  const CUfunction f = fake_kernel(&mod);
  uint64_t ns = 2000; /* 2 us kernels */
  void* params[] = {&ns};
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr live[8] = {0};
  CU(cuMemAlloc(&live[0], MiB));
  printf("ready\n");
  fflush(stdout);
  for (unsigned i = 1;; ++i) {
    const unsigned k = i % 8;
    if (live[k] != 0) {
      if (k % 2 == 0) {
        cuMemFree(live[k]);
      } else {
        cuMemFreeAsync(live[k], s);
      }
      live[k] = 0;
    } else if (k % 2 == 0) {
      cuMemAlloc(&live[k], (i * 7919u) % (2 * MiB) + 1); /* may be refused: the limit is shared */
    } else {
      cuMemAllocAsync(&live[k], (i * 104729u) % (2 * MiB) + 1, s);
    }
    cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
    if (i % 32 == 0) cuStreamSynchronize(s);
  }
}

/* A survivor of the SIGKILL storm: holds `bytes` (cuMemAlloc) for its whole life. Each line on
 * stdin: one more allocation of 1 MiB, a launch, a free, then "alive <region total> nvml <used>",
 * so the test
 * sees that nothing the killed processes left behind blocks it. Exits at end of input. */
static int cmd_survive(uint64_t bytes) {
  make_context();
  CUmodule mod;
  const CUfunction f = fake_kernel(&mod);
  uint64_t ns = 1000;
  void* params[] = {&ns};
  CUdeviceptr held;
  CU(cuMemAlloc(&held, bytes));
  nvmlDevice_t nvml_dev;
  CHECK(nvmlInit_v2() == NVML_SUCCESS, "nvmlInit_v2");
  CHECK(nvmlDeviceGetHandleByIndex_v2(0, &nvml_dev) == NVML_SUCCESS, "nvml handle");
  printf("holding\n");
  fflush(stdout);
  char line[64];
  while (fgets(line, sizeof(line), stdin) != NULL) {
    CUdeviceptr p;
    CU(cuMemAlloc(&p, MiB));
    CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CU(cuCtxSynchronize());
    CU(cuMemFree(p));
    nvmlMemory_t m;
    CHECK(nvmlDeviceGetMemoryInfo(nvml_dev, &m) == NVML_SUCCESS, "nvmlDeviceGetMemoryInfo");
    printf("alive %llu nvml %llu\n", (unsigned long long)device_used(0),
           (unsigned long long)m.used);
    fflush(stdout);
  }
  CU(cuMemFree(held));
  return 0;
}

/* A forked child gets its own slot; the parent's count is untouched; the child's is released. */
static int cmd_fork(void) {
  make_context();
  CUdeviceptr a;
  CU(cuMemAlloc(&a, 10 * MiB));
  const uint64_t total_before = device_used(0);
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    CUdeviceptr b;
    CU(cuMemAlloc(&b, 3 * MiB));
    CHECK(my_tracked(0) == 3 * MiB, "child slot holds %llu", (unsigned long long)my_tracked(0));
    CHECK(device_used(0) == total_before + 3 * MiB, "child not added to the total");
    if (getenv("PROBE_CHILD_CRASH") != NULL) _exit(0); /* no cleanup: reaped by the next look */
    exit(0);
  }
  int status = 0;
  CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
        "child failed (status %d)", status);
  CHECK(my_tracked(0) == 10 * MiB, "parent slot holds %llu", (unsigned long long)my_tracked(0));
  /* The child's 3 MiB stay counted until its slot is reaped (an exit never gives memory back
   * before the driver has freed it, i.e. before the process is gone): the limit forces a full
   * reap, and then exactly the child's usage is gone. */
  const uint64_t limit = g_region->devices[0].mem_limit;
  CUdeviceptr c;
  CU(cuMemAlloc(&c, limit - total_before));
  CHECK(device_used(0) == limit, "child's memory not released: %llu vs %llu",
        (unsigned long long)device_used(0), (unsigned long long)limit);
  CU(cuMemFree(c));
  CU(cuMemFree(a));
  printf("ok fork\n");
  return 0;
}

/* cuGetProcAddress hands out the hook of the ABI the caller asked for. */
static int cmd_procaddr(void) {
  CU(cuInit(0));
  void* vgpu_v4 = dlsym(RTLD_DEFAULT, "cuCtxCreate_v4");
  void* vgpu_v3 = dlsym(RTLD_DEFAULT, "cuCtxCreate_v3");
  void* vgpu_v2 = dlsym(RTLD_DEFAULT, "cuCtxCreate_v2");
  void* launch = dlsym(RTLD_DEFAULT, "cuLaunchKernel");
  void* launch_ptsz = dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz");
  Dl_info info;
  CHECK(dladdr(vgpu_v4, &info) && strstr(base_name(info.dli_fname), "libvgpu") != NULL,
        "cuCtxCreate_v4 does not come from libvgpu");
  struct {
    const char* symbol;
    int version;
    cuuint64_t flags;
    void* want;
  } const cases[] = {
      {"cuCtxCreate", 13000, 0, vgpu_v4},
      {"cuCtxCreate", 12000, 0, vgpu_v3},
      {"cuCtxCreate", 11000, 0, vgpu_v2},
      {"cuLaunchKernel", 12000, 0, launch},
      {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, launch_ptsz},
      {"cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, launch},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    void* fn = NULL;
    CUdriverProcAddressQueryResult st = -1;
    CU(cuGetProcAddress(cases[i].symbol, &fn, cases[i].version, cases[i].flags, &st));
    CHECK(st == CU_GET_PROC_ADDRESS_SUCCESS, "%s status %d", cases[i].symbol, (int)st);
    CHECK(fn == cases[i].want, "%s@%d flags %llu: got %p want %p", cases[i].symbol,
          cases[i].version, (unsigned long long)cases[i].flags, fn, cases[i].want);
  }
  /* The handed-out pointers work with their ABI. */
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  CUcontext c1, c2, c3;
  CUresult (*v2)(CUcontext*, unsigned, CUdevice) = vgpu_v2;
  CUresult (*v3)(CUcontext*, CUexecAffinityParam*, int, unsigned, CUdevice) = vgpu_v3;
  CUresult (*v4)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice) = vgpu_v4;
  CU(v2(&c1, 0, dev));
  CU(v3(&c2, NULL, 0, 0, dev));
  CU(v4(&c3, NULL, 0, dev));
  /* Unhooked and unknown symbols: exactly what the driver says. */
  const char* passthrough[] = {"cuMemAdvise", "cuMemPrefetchAsync"};
  for (int i = 0; i < 2; ++i) {
    for (int v = 0; v < 2; ++v) {
      void* fn = (void*)1;
      CUdriverProcAddressQueryResult st = -1;
      const CUresult rc = cuGetProcAddress(passthrough[i], &fn, v ? 12020 : 8000, 0, &st);
      if (rc == CUDA_SUCCESS) {
        CHECK(dladdr(fn, &info) && strstr(base_name(info.dli_fname), "libvgpu") == NULL,
              "%s was replaced by a hook", passthrough[i]);
      } else {
        CHECK(fn == NULL && st != CU_GET_PROC_ADDRESS_SUCCESS, "%s: bad failure report",
              passthrough[i]);
      }
    }
  }
  void* fn = (void*)1;
  CUdriverProcAddressQueryResult st = -1;
  CHECK(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &st) == CUDA_ERROR_NOT_FOUND,
        "unknown symbol not reported");
  CHECK(fn == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "unknown symbol status %d",
        (int)st);
  /* Through dlsym on the library handle, as the CUDA runtime does. */
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  CHECK(lib != NULL, "dlopen libcuda.so.1");
  CHECK(dlsym(lib, "cuMemAlloc_v2") == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), "dlsym not hooked");
  CHECK(dlsym(lib, "cuMemGetAddressRange_v2") != NULL, "dlsym of an unhooked symbol");
  CHECK(dlsym(lib, "cuNoSuchThing") == NULL, "dlsym invented a symbol");
  printf("ok procaddr\n");
  return 0;
}

/* The faked views: CUDA and NVML see the limit; NVML lists only the container's processes. */
static int cmd_views(void) {
  make_context();
  const uint64_t limit = g_region->devices[0].mem_limit;
  const uint64_t physical = g_region->devices[0].mem_physical;
  size_t total = 0, f = 0;
  CU(cuDeviceTotalMem(&total, 0));
  CHECK(total == (limit ? limit : physical), "cuDeviceTotalMem %zu", total);
  CUdeviceptr p;
  CU(cuMemAlloc(&p, 5 * MiB));
  CU(cuMemGetInfo(&f, &total));
  CHECK(total == (limit ? limit : physical), "cuMemGetInfo total %zu", total);
  if (limit) CHECK(f == limit - device_used(0), "cuMemGetInfo free %zu", f);
  CHECK(nvmlInit_v2() == NVML_SUCCESS, "nvmlInit");
  nvmlDevice_t dev;
  CHECK(nvmlDeviceGetHandleByIndex_v2(0, &dev) == NVML_SUCCESS, "nvml handle");
  nvmlMemory_t m1;
  CHECK(nvmlDeviceGetMemoryInfo(dev, &m1) == NVML_SUCCESS, "nvml mem");
  nvmlMemory_v2_t m2 = {.version = (unsigned)(sizeof(nvmlMemory_v2_t) | (2u << 24))};
  CHECK(nvmlDeviceGetMemoryInfo_v2(dev, &m2) == NVML_SUCCESS, "nvml mem v2");
  if (limit) {
    CHECK(m1.total == limit && m2.total == limit, "nvml total %llu/%llu", m1.total, m2.total);
    CHECK(m1.used == device_used(0) && m1.free == limit - m1.used, "nvml used %llu free %llu",
          m1.used, m1.free);
    CHECK(m2.used + m2.free == limit, "nvml v2 used+free %llu", m2.used + m2.free);
  } else {
    CHECK(m1.total == physical, "nvml total unlimited %llu", m1.total);
  }
  nvmlProcessInfo_v2_t infos[64];
  unsigned n = 64;
  CHECK(nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, infos) == NVML_SUCCESS, "nvml procs");
  int me = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (infos[i].pid == (unsigned)getpid()) me = 1;
    if (getenv("PROBE_OTHER_PID") != NULL) {
      CHECK(infos[i].pid != (unsigned)atoi(getenv("PROBE_OTHER_PID")),
            "process of another container listed");
    }
  }
  CHECK(me, "own process not listed (%u entries)", n);
  printf("ok views total=%zu procs=%u\n", total, n);
  return 0;
}

/* A process of a container with its own PID namespace (the fake NVML adds an offset to PIDs):
 * holds a context, waits for a line on stdin (the node monitor's turn to match its host PID),
 * then says whether NVML lists it and how many 1 MiB blocks fit beside its context. */
static int cmd_hostpid(void) {
  make_context();
  printf("ready\n");
  fflush(stdout);
  char line[16];
  CHECK(read(0, line, sizeof(line)) > 0, "no go line");
  CHECK(nvmlInit_v2() == NVML_SUCCESS, "nvml init");
  nvmlDevice_t dev;
  CHECK(nvmlDeviceGetHandleByIndex_v2(0, &dev) == NVML_SUCCESS, "nvml handle");
  nvmlProcessInfo_v2_t infos[64];
  unsigned n = 64;
  CHECK(nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, infos) == NVML_SUCCESS, "nvml procs");
  int listed = 0;
  for (unsigned i = 0; i < n; ++i) listed |= infos[i].pid == (unsigned)getpid();
  int grabbed = 0;
  CUdeviceptr p;
  for (;;) {
    const CUresult rc = cuMemAlloc(&p, MiB);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) break;
    CHECK(rc == CUDA_SUCCESS, "alloc returned %d", (int)rc);
    ++grabbed;
  }
  printf("listed %d grabbed %d\n", listed, grabbed);
  fflush(stdout);
  return 0;
}

/* Holds a context and some memory until stdin closes (a process of another container). */
static int cmd_hold(void) {
  make_context();
  CUdeviceptr p;
  CU(cuMemAlloc(&p, 2 * MiB));
  printf("holding\n");
  fflush(stdout);
  char buf[16];
  while (read(0, buf, sizeof(buf)) > 0) {
  }
  return 0;
}

/* This process's measured overhead (context/module memory) on record d. */
static uint64_t my_overhead(int d) {
  for (int s = 0; s < VGPU_REGION_MAX_PROCS; ++s) {
    if (__atomic_load_n(&g_region->procs[s].pid, __ATOMIC_ACQUIRE) == (int)getpid()) {
      return __atomic_load_n(&g_region->procs[s].mem_overhead[d], __ATOMIC_ACQUIRE);
    }
  }
  return UINT64_MAX;
}

#define EXPECT_USAGE(tracked, overhead)                                        \
  CHECK(my_tracked(0) == (tracked) && my_overhead(0) == (overhead) &&          \
            device_used(0) == (tracked) + (overhead),                          \
        "tracked %llu overhead %llu total %llu, want %llu + %llu",             \
        (unsigned long long)my_tracked(0), (unsigned long long)my_overhead(0), \
        (unsigned long long)device_used(0), (unsigned long long)(tracked),     \
        (unsigned long long)(overhead))

/* Memory of a destroyed context (its allocations, arrays and its own footprint) leaves the
 * container's usage at once; stream-ordered memory, which belongs to the process, stays.
 * Expects VGPU_FAKE_CONTEXT_MEMORY=30m. */
static int cmd_ctxfree(void) {
  CU(cuInit(0));
  map_region();
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  const uint64_t ctx_mem = 30 * MiB;

  /* Explicit context, destroyed with cuCtxDestroy_v2. */
  CUcontext ctx;
  CU(cuCtxCreate(&ctx, NULL, 0, dev));
  EXPECT_USAGE(0, ctx_mem);
  CUdeviceptr a, m, s;
  CU(cuMemAlloc(&a, 10 * MiB));
  CU(cuMemAllocManaged(&m, 5 * MiB, CU_MEM_ATTACH_GLOBAL));
  CU(cuMemAllocAsync(&s, 4 * MiB, NULL));
  CUDA_ARRAY_DESCRIPTOR ad = {
      .Width = 512, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1}; /* 2 MiB */
  CUarray arr;
  CU(cuArrayCreate(&arr, &ad));
  EXPECT_USAGE(21 * MiB, ctx_mem);
  CU(cuCtxDestroy(ctx));
  EXPECT_USAGE(4 * MiB, 0); /* the stream-ordered block outlives the context */

  /* Primary context: only the last release destroys it. */
  CUcontext p1, p2;
  CU(cuDevicePrimaryCtxRetain(&p1, dev));
  CU(cuDevicePrimaryCtxRetain(&p2, dev));
  CHECK(p1 == p2, "two primary contexts");
  CU(cuCtxSetCurrent(p1));
  CU(cuMemFreeAsync(s, NULL));
  CU(cuMemAlloc(&a, 8 * MiB));
  EXPECT_USAGE(8 * MiB, ctx_mem);
  CU(cuDevicePrimaryCtxRelease(dev));
  EXPECT_USAGE(8 * MiB, ctx_mem);
  CU(cuDevicePrimaryCtxRelease(dev));
  EXPECT_USAGE(0, 0);
  CHECK(cuMemFree(a) != CUDA_SUCCESS, "the driver kept memory of a destroyed context");
  EXPECT_USAGE(0, 0);

  /* Reset destroys it whatever the count. */
  CU(cuDevicePrimaryCtxRetain(&p1, dev));
  CU(cuDevicePrimaryCtxRetain(&p1, dev));
  CU(cuCtxSetCurrent(p1));
  CU(cuMemAlloc(&a, 6 * MiB));
  EXPECT_USAGE(6 * MiB, ctx_mem);
  CU(cuDevicePrimaryCtxReset(dev));
  EXPECT_USAGE(0, 0);

  /* The CUDA 2.0/7.0 ABIs (cuCtxDestroy, cuDevicePrimaryCtxRelease) too. */
  CUresult (*destroy_v1)(CUcontext) = (CUresult(*)(CUcontext))dlsym(RTLD_DEFAULT, "cuCtxDestroy");
  CUresult (*release_v1)(CUdevice) =
      (CUresult(*)(CUdevice))dlsym(RTLD_DEFAULT, "cuDevicePrimaryCtxRelease");
  CHECK(destroy_v1 != NULL && release_v1 != NULL, "legacy context entry points missing");
  CU(cuCtxCreate(&ctx, NULL, 0, dev));
  CU(cuMemAlloc(&a, 3 * MiB));
  EXPECT_USAGE(3 * MiB, ctx_mem);
  CU(destroy_v1(ctx));
  EXPECT_USAGE(0, 0);
  CU(cuDevicePrimaryCtxRetain(&p1, dev));
  CU(cuCtxSetCurrent(p1));
  CU(cuMemAlloc(&a, 7 * MiB));
  EXPECT_USAGE(7 * MiB, ctx_mem);
  CU(release_v1(dev));
  EXPECT_USAGE(0, 0);

  /* Memory freed normally is not released twice when its context goes. */
  CU(cuCtxCreate(&ctx, NULL, 0, dev));
  CU(cuMemAlloc(&a, 9 * MiB));
  CU(cuMemAlloc(&m, 1 * MiB));
  CU(cuMemFree(a));
  EXPECT_USAGE(1 * MiB, ctx_mem);
  CU(cuCtxDestroy(ctx));
  EXPECT_USAGE(0, 0);
  printf("ok ctxfree\n");
  return 0;
}

static int range_attribute(CUmem_range_attribute attribute, CUdeviceptr p) {
  int value = -100;
  CU(cuMemRangeGetAttribute(&value, sizeof(value), attribute, p, MiB));
  return value;
}

/* Every ABI cuGetProcAddress hands out through libvgpu is callable with that ABI and reaches the
 * fake's matching entry point, as the fake's behaviour shows. Expects VGPU_FAKE_CONTEXT_MEMORY=30m
 * and VGPU_FAKE_GPUS=2. */
static int cmd_procabi(void) {
  make_context();
  CUdevice dev1;
  CU(cuDeviceGet(&dev1, 1));
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  CHECK(lib != NULL, "dlopen libcuda.so.1");
#define PROC(sym, ver, flags)                                                             \
  ({                                                                                      \
    void* fn_ = NULL;                                                                     \
    CUdriverProcAddressQueryResult st_ = -1;                                              \
    CU(cuGetProcAddress(sym, &fn_, ver, flags, &st_));                                    \
    CHECK(st_ == CU_GET_PROC_ADDRESS_SUCCESS && fn_ != NULL, "%s@%d status %d", sym, ver, \
          (int)st_);                                                                      \
    fn_;                                                                                  \
  })
  /* cuCtxCreate: each ABI creates a context on the device it was given (device 1, so a wrong ABI
   * would read another argument as the device) whose memory libvgpu measures at once. */
  const uint64_t base = my_overhead(1);
  CUresult (*v2)(CUcontext*, unsigned, CUdevice) = PROC("cuCtxCreate", 3020, 0);
  CUresult (*v3)(CUcontext*, CUexecAffinityParam*, int, unsigned, CUdevice) =
      PROC("cuCtxCreate", 11040, 0);
  CUresult (*v4)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice) =
      PROC("cuCtxCreate", 12050, 0);
  CUcontext c[3];
  CU(v2(&c[0], 0, dev1));
  CU(v3(&c[1], NULL, 0, 0, dev1));
  CU(v4(&c[2], NULL, 0, dev1));
  for (int i = 0; i < 3; ++i) {
    CUdevice d = -1;
    CU(cuCtxSetCurrent(c[i]));
    CU(cuCtxGetDevice(&d));
    CHECK(d == dev1, "context %d on device %d", i, (int)d);
  }
  CHECK(my_overhead(1) == base + 3 * 30 * MiB, "contexts measured %llu",
        (unsigned long long)my_overhead(1));
  for (int i = 0; i < 3; ++i) CU(cuCtxDestroy(c[i]));
  CHECK(my_overhead(1) == base, "contexts not released: %llu", (unsigned long long)my_overhead(1));
  CU(cuCtxSetCurrent(g_ctx));

  /* cuMemAdvise / cuMemPrefetchAsync are not hooked: the driver's own entry point of each ABI. */
  struct {
    const char* symbol;
    int version;
    cuuint64_t flags;
    const char* fake;
  } const passthrough[] = {
      {"cuMemAdvise", 8000, 0, "cuMemAdvise"},
      {"cuMemAdvise", 12020, 0, "cuMemAdvise_v2"},
      {"cuMemPrefetchAsync", 8000, 0, "cuMemPrefetchAsync"},
      {"cuMemPrefetchAsync", 8000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuMemPrefetchAsync_ptsz"},
      {"cuMemPrefetchAsync", 12020, 0, "cuMemPrefetchAsync_v2"},
      {"cuMemPrefetchAsync", 12020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
       "cuMemPrefetchAsync_v2_ptsz"},
  };
  void* fns[6];
  for (int i = 0; i < 6; ++i) {
    fns[i] = PROC(passthrough[i].symbol, passthrough[i].version, passthrough[i].flags);
    void* want = dlsym(lib, passthrough[i].fake);
    CHECK(want != NULL && fns[i] == want, "%s@%d flags %llu is not the driver's %s",
          passthrough[i].symbol, passthrough[i].version, (unsigned long long)passthrough[i].flags,
          passthrough[i].fake);
  }
  CUdeviceptr m;
  CU(cuMemAllocManaged(&m, MiB, CU_MEM_ATTACH_GLOBAL));
  int where = 0;
#define RANGE(attr) (where = range_attribute(attr, m))
  CUresult (*advise_v1)(CUdeviceptr, size_t, CUmem_advise, CUdevice) = fns[0];
  CUresult (*advise_v2)(CUdeviceptr, size_t, CUmem_advise, CUmemLocation) = fns[1];
  CU(advise_v1(m, MiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 1));
  CHECK(RANGE(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION) == 1, "v1 advice: %d", where);
  const CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
  CU(advise_v2(m, MiB, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, host));
  CHECK(RANGE(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION) == CU_DEVICE_CPU, "v2 advice: %d", where);
  CUresult (*prefetch_v1)(CUdeviceptr, size_t, CUdevice, CUstream) = fns[2];
  CUresult (*prefetch_v1_pt)(CUdeviceptr, size_t, CUdevice, CUstream) = fns[3];
  CUresult (*prefetch_v2)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream) = fns[4];
  CUresult (*prefetch_v2_pt)(CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream) = fns[5];
  CU(prefetch_v1(m, MiB, 1, NULL));
  CHECK(RANGE(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION) == 1, "v1 prefetch: %d", where);
  CU(prefetch_v1_pt(m, MiB, CU_DEVICE_CPU, NULL));
  CHECK(RANGE(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION) == CU_DEVICE_CPU,
        "v1 ptsz prefetch: %d", where);
  const CUmemLocation gpu1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
  CU(prefetch_v2(m, MiB, gpu1, 0, NULL));
  CHECK(RANGE(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION) == 1, "v2 prefetch: %d", where);
  CU(prefetch_v2_pt(m, MiB, host, 0, NULL));
  CHECK(RANGE(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE) == CU_MEM_LOCATION_TYPE_HOST,
        "v2 ptsz prefetch: %d", where);
  CU(cuMemFree(m));

  /* cuLaunchKernel: stream 0 is the legacy stream through the plain ABI and this thread's stream
   * through _ptsz; a 100 ms kernel shows which stream received it. */
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     unsigned, CUstream, void**, void**) = PROC("cuLaunchKernel", 4000, 0);
  CUresult (*launch_pt)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        unsigned, CUstream, void**, void**) =
      PROC("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  CHECK((void*)launch != (void*)launch_pt, "one launch entry point for both streams");
  CUmodule mod;
  const CUfunction f = fake_kernel(&mod);
  uint64_t ns = 100000000ull;
  void* params[] = {&ns};
  CU(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
  CHECK(cuStreamQuery(CU_STREAM_LEGACY) == CUDA_ERROR_NOT_READY, "plain launch not on legacy");
  CHECK(cuStreamQuery(CU_STREAM_PER_THREAD) == CUDA_SUCCESS, "plain launch on per-thread stream");
  CU(cuCtxSynchronize());
  CU(launch_pt(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
  CHECK(cuStreamQuery(CU_STREAM_PER_THREAD) == CUDA_ERROR_NOT_READY, "_ptsz launch not per-thread");
  CU(cuCtxSynchronize());
  CU(cuModuleUnload(mod));
#undef RANGE
#undef PROC
  printf("ok procabi\n");
  return 0;
}

/* SM limit with stream capture (run with CUDA_DEVICE_SM_LIMIT and VGPU_SM_STATS=1): launches into
 * a capture are recorded into the graph, not measured; the graph's launch is. The capture is begun
 * through a cuGetProcAddress pointer, as the CUDA runtime does, and must come from libvgpu. The
 * limiter's exit report then counts 4 + 1 + 2 = 7 measured launches (13 if the 2 × 3 captured ones
 * were measured). */
static int cmd_smcapture(void) {
  make_context();
  CUmodule mod;
  const CUfunction f = fake_kernel(&mod);
  uint64_t ns = 1000000ull;
  void* params[] = {&ns};
  CUstream s, c;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CU(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 4; ++i) CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = NULL;
  CUdriverProcAddressQueryResult st = -1;
  CU(cuGetProcAddress("cuStreamBeginCapture", (void**)&begin, 12000, 0, &st));
  Dl_info info;
  CHECK(begin != NULL && dladdr((void*)begin, &info) &&
            strstr(base_name(info.dli_fname), "libvgpu") != NULL,
        "cuStreamBeginCapture does not come from libvgpu");
  for (int round = 0; round < 2; ++round) { /* a second capture after the first has ended */
    CU(begin(c, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < 3; ++i) CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, c, params, NULL));
    CUgraph graph;
    CU(cuStreamEndCapture(c, &graph));
    CHECK(cuStreamEndCapture(c, &graph) != CUDA_SUCCESS, "ending a finished capture succeeded");
    if (round == 0) {
      CUgraphExec exec;
      CU(cuGraphInstantiateWithFlags(&exec, graph, 0));
      CU(cuGraphLaunch(exec, s));
      CU(cuGraphExecDestroy(exec));
    }
    CU(cuGraphDestroy(graph));
  }
  for (int i = 0; i < 2; ++i) CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  CU(cuCtxSynchronize());
  CU(cuModuleUnload(mod));
  printf("ok smcapture\n");
  return 0;
}

/* Short batches between synchronisations (5 kernels of 100 us: less than an event's worth of
 * work) are measured when the app waits through cuStreamSynchronize, a cuGetProcAddress pointer
 * to cuCtxSynchronize, or cuEventSynchronize: the limiter's statistics then show 3.0 ms measured
 * for the first 6 of 7 batches (the last one's event is read at a next launch). */
static int cmd_smsync(void) {
  make_context();
  CUmodule mod;
  const CUfunction f = fake_kernel(&mod);
  uint64_t ns = 100000ull;
  void* params[] = {&ns};
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUevent e;
  CU(cuEventCreate(&e, CU_EVENT_DEFAULT));
  CUresult (*ctx_sync)(void) = NULL;
  CUdriverProcAddressQueryResult st = -1;
  CU(cuGetProcAddress("cuCtxSynchronize", (void**)&ctx_sync, 12000, 0, &st));
  Dl_info info;
  CHECK(ctx_sync != NULL && dladdr((void*)ctx_sync, &info) &&
            strstr(base_name(info.dli_fname), "libvgpu") != NULL,
        "cuCtxSynchronize does not come from libvgpu");
  /* A first batch teaches the limiter the kernels' duration (it records an event per launch
   * until it knows one). */
  for (int i = 0; i < 5; ++i) CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  CU(cuStreamSynchronize(s));
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 5; ++i) CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
    if (round % 3 == 0) {
      CU(cuStreamSynchronize(s));
    } else if (round % 3 == 1) {
      CU(ctx_sync());
    } else {
      CU(cuEventRecord(e, s));
      CU(cuEventSynchronize(e));
    }
    usleep(20000); /* the app does something else before its next batch */
  }
  CU(cuEventDestroy(e));
  CU(cuModuleUnload(mod));
  printf("ok smsync\n");
  return 0;
}

/* The memory views of device 0 as a program sizes itself by them, whatever the limit (0 included):
 * "memview device_total=<cuDeviceTotalMem> cuda_total=<cuMemGetInfo> cuda_free=... nvml_total=
 * nvml_free=... context=<0 ok, else its CUresult> alloc=<CUresult of a 1 MiB cuMemAlloc>". */
static int cmd_memview(void) {
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  size_t device_total = 0;
  CU(cuDeviceTotalMem(&device_total, dev));
  const CUresult ctx_rc = cuDevicePrimaryCtxRetain(&g_ctx, dev);
  size_t f = 0, t = 0;
  int alloc_rc = -1;
  if (ctx_rc == CUDA_SUCCESS) {
    CU(cuCtxSetCurrent(g_ctx));
    CU(cuMemGetInfo(&f, &t));
    CUdeviceptr p = 0;
    alloc_rc = (int)cuMemAlloc(&p, MiB);
    if (alloc_rc == CUDA_SUCCESS) CU(cuMemFree(p));
  }
  CHECK(nvmlInit_v2() == NVML_SUCCESS, "nvmlInit");
  nvmlDevice_t nd;
  CHECK(nvmlDeviceGetHandleByIndex_v2(0, &nd) == NVML_SUCCESS, "nvml handle");
  nvmlMemory_t m;
  CHECK(nvmlDeviceGetMemoryInfo(nd, &m) == NVML_SUCCESS, "nvml mem");
  printf(
      "memview device_total=%zu cuda_total=%zu cuda_free=%zu nvml_total=%llu nvml_free=%llu "
      "context=%d alloc=%d\n",
      device_total, t, f, m.total, m.free, (int)ctx_rc, alloc_rc);
  return 0;
}

/* A tenant's process driven line by line on stdin, for the adversarial suite: "a <bytes>" allocates
 * (answers "ok" or "oom <CUresult>"), "f" frees everything it holds ("freed"), "u" answers "used
 * <region total of device 0>". Exits 0 at end of input, holding what it holds (an exit gives it
 * back through the reaper). Never fails on a refusal: refusals are what it is there to observe. */
static int cmd_tenant(void) {
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  const CUresult ctx_rc = cuDevicePrimaryCtxRetain(&g_ctx, dev);
  if (ctx_rc == CUDA_SUCCESS) CU(cuCtxSetCurrent(g_ctx));
  map_region();
  printf("ready context=%d\n", (int)ctx_rc);
  CUdeviceptr held[256];
  int n = 0;
  char line[128];
  while (fgets(line, sizeof(line), stdin) != NULL) {
    if (line[0] == 'a') {
      CUdeviceptr p = 0;
      const CUresult rc = ctx_rc == CUDA_SUCCESS ? cuMemAlloc(&p, strtoull(line + 1, NULL, 0))
                                                 : CUDA_ERROR_INVALID_CONTEXT;
      if (rc == CUDA_SUCCESS && n < 256) held[n++] = p;
      if (rc == CUDA_SUCCESS) {
        printf("ok\n");
      } else {
        printf("oom %d\n", (int)rc);
      }
    } else if (line[0] == 'f') {
      while (n > 0) cuMemFree(held[--n]);
      printf("freed\n");
    } else if (line[0] == 'u') {
      printf("used %llu\n", g_region != NULL ? (unsigned long long)device_used(0) : 0ull);
    }
  }
  return 0;
}

/* Run WITHOUT libvgpu, beside a container: samples device 0 every ~200 us for `ms` milliseconds,
 * as NVML (the fake driver's real usage) and as the container's region total, and prints the
 * largest of each: "peak nvml=<bytes> region=<bytes> samples=<n>". */
static int cmd_peak(uint64_t ms) {
  CHECK(nvmlInit_v2() == NVML_SUCCESS, "nvmlInit");
  nvmlDevice_t nd;
  CHECK(nvmlDeviceGetHandleByIndex_v2(0, &nd) == NVML_SUCCESS, "nvml handle");
  const uint64_t end = now_ns() + ms * 1000000ull;
  uint64_t peak_nvml = 0, peak_region = 0, samples = 0;
  while (now_ns() < end) {
    nvmlMemory_t m;
    if (nvmlDeviceGetMemoryInfo(nd, &m) == NVML_SUCCESS && m.used > peak_nvml) peak_nvml = m.used;
    struct stat st;
    const char* path = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
    /* Mapped once laid out (reading a page past a file's end would fault). */
    if (g_region == NULL && path != NULL && stat(path, &st) == 0 &&
        st.st_size == (off_t)sizeof(struct vgpu_region)) {
      map_region();
    }
    if (g_region != NULL && device_used(0) > peak_region) peak_region = device_used(0);
    ++samples;
    usleep(200);
  }
  printf("peak nvml=%llu region=%llu samples=%llu\n", (unsigned long long)peak_nvml,
         (unsigned long long)peak_region, (unsigned long long)samples);
  return 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc < 2) {
    fprintf(stderr,
            "usage: libvgpu_probe paths|boundary|grab N|churn|storm|survive "
            "N|usage|init|fork|procaddr|views|hold|memview|tenant|peak MS\n");
    return 2;
  }
  const char* cmd = argv[1];
  if (strcmp(cmd, "paths") == 0) return cmd_paths();
  if (strcmp(cmd, "boundary") == 0) return cmd_boundary();
  if (strcmp(cmd, "grab") == 0 && argc > 2) return cmd_grab(strtoull(argv[2], NULL, 0));
  if (strcmp(cmd, "churn") == 0) return cmd_churn();
  if (strcmp(cmd, "usage") == 0) return cmd_usage();
  if (strcmp(cmd, "init") == 0) return cmd_init();
  if (strcmp(cmd, "storm") == 0) return cmd_storm();
  if (strcmp(cmd, "survive") == 0 && argc > 2) return cmd_survive(strtoull(argv[2], NULL, 0));
  if (strcmp(cmd, "fork") == 0) return cmd_fork();
  if (strcmp(cmd, "procaddr") == 0) return cmd_procaddr();
  if (strcmp(cmd, "procabi") == 0) return cmd_procabi();
  if (strcmp(cmd, "ctxfree") == 0) return cmd_ctxfree();
  if (strcmp(cmd, "views") == 0) return cmd_views();
  if (strcmp(cmd, "hold") == 0) return cmd_hold();
  if (strcmp(cmd, "hostpid") == 0) return cmd_hostpid();
  if (strcmp(cmd, "smcapture") == 0) return cmd_smcapture();
  if (strcmp(cmd, "smsync") == 0) return cmd_smsync();
  if (strcmp(cmd, "memview") == 0) return cmd_memview();
  if (strcmp(cmd, "tenant") == 0) return cmd_tenant();
  if (strcmp(cmd, "peak") == 0 && argc > 2) return cmd_peak(strtoull(argv[2], NULL, 0));
  fprintf(stderr, "unknown command %s\n", cmd);
  return 2;
}
