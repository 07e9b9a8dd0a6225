/* sm_tenant: one tenant of the SM-limit integration tests
 * (tests/libvgpu/sm/sm_integration_test.cpp). A whole process, started the way a pod starts one:
 * libvgpu.so preloaded, the fake driver (and the fake CUPTI) on the library path, the limits in the
 * environment. It runs a loop of the fake driver's kernels from TENANT_START_NS to TENANT_END_NS
 * (CLOCK_MONOTONIC) and prints one line: work_ns=<GPU time of its kernels that started and
 * completed inside the window> window_ns=<...> launches=<...> The work is counted from what the
 * program itself launched and saw complete (kernel duration × kernels), so it is the ground truth
 * of what the tenant got, whatever the limiter measured.
 *
 * Environment: TENANT_KERNEL_US (duration of one kernel, default 2000), TENANT_SYNC_EVERY (launches
 * between two cuStreamSynchronize, default 4), TENANT_GAP_US (host time between launches, a
 * host-bound loop; default 0), TENANT_GAP_UNTIL_NS (the gaps end then: the loop saturates from
 * there on; default never), TENANT_BURST_MS and TENANT_PAUSE_MS (work in bursts of that long,
 * each followed by a pause of the host that long, as a service between requests or processes
 * taking turns do; default: no pauses), TENANT_START_NS, TENANT_END_NS, TENANT_PROFILER=1 (the
 * application takes CUPTI's activity API itself, as a profiler does: libcupti loaded globally, its
 * buffer callbacks registered through the symbol the process resolves), TENANT_SUBSCRIBE=1 (the
 * application subscribes to CUPTI's callback API, as tools do, through the symbol the process
 * resolves), TENANT_CONTEXTLESS=1 (before the loop, a launch and a synchronisation with no current
 * context, which the driver refuses: prints contextless=<their results>), TENANT_SECOND_THREAD=1
 * (the second half of each batch is launched onto the same stream by another thread, as PyTorch's
 * autograd thread launches the backward pass of a step whose forward pass the main thread
 * launched), TENANT_SETUP_MS (before the loop, a setup stretch that long: one short kernel of
 * TENANT_SETUP_KERNEL_US, default 5, every TENANT_SETUP_GAP_US, default 20000, and no
 * synchronisation, as a framework initialising a model launches). After the loop, before the
 * result, one line threads=<the names of its threads> and one with the percentiles of its
 * synchronised batches' durations inside the window (batches=..., a request loop's latency). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t env_int(const char* name, int64_t fallback) {
  const char* text = getenv(name);
  return text != NULL && *text != '\0' ? strtoll(text, NULL, 10) : fallback;
}

#define CU(call)                                        \
  do {                                                  \
    CUresult rc_ = (call);                              \
    if (rc_ != CUDA_SUCCESS) {                          \
      printf("FAIL %s returned %d\n", #call, (int)rc_); \
      return 1;                                         \
    }                                                   \
  } while (0)

/* A profiler's buffer callbacks (CUPTI's types, spelled out: no cupti.h needed). */
static void request_buffer(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 64 * 1024;
  *buffer = aligned_alloc(8, *size);
  *max_records = 0;
}
static void complete_buffer(void* ctx, uint32_t stream, uint8_t* buffer, size_t size,
                            size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  (void)valid;
  free(buffer);
}

static int take_cupti(void) {
  if (dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL) == NULL) return -1;
  typedef int (*register_fn)(void (*)(uint8_t**, size_t*, size_t*),
                             void (*)(void*, uint32_t, uint8_t*, size_t, size_t));
  register_fn reg = (register_fn)dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks");
  return reg != NULL ? reg(request_buffer, complete_buffer) : -1;
}

static int subscribe_cupti(void) {
  if (dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL) == NULL) return -1;
  typedef int (*subscribe_fn)(void**, void (*)(void*, int, unsigned, const void*), void*);
  subscribe_fn subscribe = (subscribe_fn)dlsym(RTLD_DEFAULT, "cuptiSubscribe");
  void* handle = NULL;
  return subscribe != NULL ? subscribe(&handle, NULL, NULL) : -1;
}

/* The loop's launches and what it counts of them, shared by the threads that launch: one at a time
 * (the other waits on its semaphore). */
struct loop {
  CUfunction f;
  CUstream s;
  void** params;
  int64_t start;
  int64_t gap_ns;
  int64_t gap_until;
  int64_t launches;
  int64_t batch;         /* launched since the last synchronisation */
  int64_t batch_counted; /* of them, launched inside the window */
  CUresult failed;       /* the first failed launch */
};

/* One launch at `t`. */
static void launch_one(struct loop* l, int64_t t) {
  const CUresult rc = cuLaunchKernel(l->f, 1, 1, 1, 1, 1, 1, 0, l->s, l->params, NULL);
  if (rc != CUDA_SUCCESS && l->failed == CUDA_SUCCESS) l->failed = rc;
  ++l->launches;
  ++l->batch;
  /* A kernel launched before the window may run inside it: count only what was launched in it. */
  if (t >= l->start) ++l->batch_counted;
}

/* The host's work after a launch at `t` (a host-bound loop). */
static void host_gap(const struct loop* l, int64_t t) {
  if (l->gap_ns > 0 && t < l->gap_until) {
    const int64_t until = now_ns() + l->gap_ns;
    while (now_ns() < until) {
    }
  }
}

/* TENANT_SECOND_THREAD: launches `second_count` of the batch when `go` is posted, then posts
 * `done`. */
struct second_thread {
  struct loop* loop;
  CUcontext ctx;
  int64_t count;
  sem_t go;
  sem_t done;
  int stop;
};

static void* second_thread_main(void* arg) {
  struct second_thread* st = arg;
  cuCtxSetCurrent(st->ctx);
  for (;;) {
    sem_wait(&st->go);
    if (st->stop) return NULL;
    for (int64_t i = 0; i < st->count; ++i) {
      const int64_t t = now_ns();
      launch_one(st->loop, t);
      host_gap(st->loop, t);
    }
    sem_post(&st->done);
  }
}

/* One line, threads=<name>,<name>,...: the names of the process's threads (libvgpu's among them)
 * while it still runs. */
static void print_threads(void) {
  char line[4096] = "threads=";
  size_t used = strlen(line);
  DIR* dir = opendir("/proc/self/task");
  for (struct dirent* e = dir != NULL ? readdir(dir) : NULL; e != NULL; e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    char path[300]; /* d_name holds up to 255 bytes */
    char name[32] = "";
    (void)snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    FILE* f = fopen(path, "r");
    if (f == NULL) continue; /* the thread ended meanwhile */
    if (fgets(name, sizeof(name), f) != NULL) name[strcspn(name, "\n")] = '\0';
    (void)fclose(f);
    const int n = snprintf(line + used, sizeof(line) - used, "%s%s",
                           used > strlen("threads=") ? "," : "", name);
    if (n > 0 && (size_t)n < sizeof(line) - used) used += (size_t)n;
  }
  if (dir != NULL) (void)closedir(dir);
  printf("%s\n", line);
}

/* Each synchronised batch inside the window, from its first launch to its synchronisation's
 * return: a request of a back-to-back request loop. */
enum { kMaxBatches = 1 << 16 };
static int64_t batch_ns[kMaxBatches];
static int n_batches;

static int compare_ns(const void* a, const void* b) {
  const int64_t x = *(const int64_t*)a;
  const int64_t y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

/* One line, batches=<n> batch_p50_us=<...> batch_p99_us=<...> batch_max_us=<...> (nearest rank). */
static void print_batches(void) {
  if (n_batches == 0) {
    printf("batches=0\n");
    return;
  }
  qsort(batch_ns, (size_t)n_batches, sizeof(batch_ns[0]), compare_ns);
  const int p50 = (n_batches * 50 + 99) / 100 - 1;
  const int p99 = (n_batches * 99 + 99) / 100 - 1;
  printf("batches=%d batch_p50_us=%lld batch_p99_us=%lld batch_max_us=%lld\n", n_batches,
         (long long)(batch_ns[p50] / 1000), (long long)(batch_ns[p99] / 1000),
         (long long)(batch_ns[n_batches - 1] / 1000));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const int64_t kernel_ns = env_int("TENANT_KERNEL_US", 2000) * 1000;
  const int64_t sync_every = env_int("TENANT_SYNC_EVERY", 4);
  const int64_t gap_ns = env_int("TENANT_GAP_US", 0) * 1000;
  const int64_t gap_until = env_int("TENANT_GAP_UNTIL_NS", INT64_MAX);
  const int64_t burst_ns = env_int("TENANT_BURST_MS", 0) * 1000000;
  const int64_t pause_ns = env_int("TENANT_PAUSE_MS", 0) * 1000000;
  const int64_t start = env_int("TENANT_START_NS", now_ns());
  const int64_t end = env_int("TENANT_END_NS", start + 1000000000);
  CU(cuInit(0));
  if (env_int("TENANT_PROFILER", 0) != 0 && take_cupti() != 0) {
    printf("FAIL cannot take CUPTI's activity API\n");
    return 1;
  }
  if (env_int("TENANT_SUBSCRIBE", 0) != 0 && subscribe_cupti() != 0) {
    printf("FAIL cannot subscribe to CUPTI's callbacks\n");
    return 1;
  }
  CUdevice dev;
  CUcontext ctx;
  CU(cuDeviceGet(&dev, 0));
  CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CUfunction f;
  CU(cuModuleLoadData(&mod, "fake image"));
  CU(cuModuleGetFunction(&f, mod, "k")); /* the fake's kernel: params[0] = its duration in ns */
  CUstream s;
  CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  uint64_t ns = (uint64_t)kernel_ns;
  void* params[] = {&ns};
  if (env_int("TENANT_CONTEXTLESS", 0) != 0) {
    CU(cuCtxSetCurrent(NULL));
    const CUresult launched = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
    const CUresult synced = cuCtxSynchronize();
    CU(cuCtxSetCurrent(ctx));
    printf("contextless=%d,%d\n", (int)launched, (int)synced);
  }
  const int64_t setup_ns = env_int("TENANT_SETUP_MS", 0) * 1000000;
  if (setup_ns > 0) {
    uint64_t setup_kernel_ns = (uint64_t)env_int("TENANT_SETUP_KERNEL_US", 5) * 1000;
    void* setup_params[] = {&setup_kernel_ns};
    const int64_t setup_gap_ns = env_int("TENANT_SETUP_GAP_US", 20000) * 1000;
    const struct timespec gap = {(time_t)(setup_gap_ns / 1000000000),
                                 (long)(setup_gap_ns % 1000000000)};
    for (const int64_t from = now_ns(); now_ns() - from < setup_ns;) {
      CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, setup_params, NULL));
      nanosleep(&gap, NULL);
    }
  }
  struct loop l = {f, s, params, start, gap_ns, gap_until, 0, 0, 0, CUDA_SUCCESS};
  /* With a second thread, the main thread launches the first half of each batch. */
  struct second_thread second = {&l, ctx, sync_every / 2, {{0}}, {{0}}, 0};
  const int two = env_int("TENANT_SECOND_THREAD", 0) != 0 && second.count > 0;
  const int64_t first_count = two ? sync_every - second.count : sync_every;
  pthread_t second_id;
  if (two) {
    sem_init(&second.go, 0, 0);
    sem_init(&second.done, 0, 0);
    if (pthread_create(&second_id, NULL, second_thread_main, &second) != 0) {
      printf("FAIL cannot start the second thread\n");
      return 1;
    }
  }
  int64_t work = 0;
  int64_t batch_from = 0;
  int64_t burst_end = now_ns() + burst_ns;
  for (int64_t t = now_ns(); t < end; t = now_ns()) {
    if (burst_ns > 0 && pause_ns > 0 && t >= burst_end) {
      CU(cuStreamSynchronize(s));
      if (now_ns() <= end) work += l.batch_counted * kernel_ns;
      l.batch = l.batch_counted = 0;
      const struct timespec pause = {(time_t)(pause_ns / 1000000000),
                                     (long)(pause_ns % 1000000000)};
      nanosleep(&pause, NULL);
      burst_end = now_ns() + burst_ns;
      continue;
    }
    if (l.batch == 0) batch_from = t;
    launch_one(&l, t);
    if (two && l.batch == first_count) {
      sem_post(&second.go);
      sem_wait(&second.done);
    }
    CU(l.failed);
    if (l.batch >= sync_every) {
      CU(cuStreamSynchronize(s));
      const int64_t synced = now_ns();
      if (synced <= end) work += l.batch_counted * kernel_ns;
      if (batch_from >= start && synced <= end && n_batches < kMaxBatches)
        batch_ns[n_batches++] = synced - batch_from;
      l.batch = l.batch_counted = 0;
    }
    host_gap(&l, t);
  }
  if (two) {
    second.stop = 1;
    sem_post(&second.go);
    pthread_join(second_id, NULL);
  }
  print_threads();
  print_batches();
  CU(cuStreamSynchronize(s));
  printf("work_ns=%lld window_ns=%lld launches=%lld\n", (long long)work, (long long)(end - start),
         (long long)l.launches);
  CU(cuModuleUnload(mod));
  return 0;
}
