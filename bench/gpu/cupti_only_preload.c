// What CUPTI's kernel records cost a whole process, without libvgpu (issue 18): preloaded, it
// sets CUPTI up the way libvgpu's SM limiter does in records mode (buffers from a pool, the
// CLOCK_MONOTONIC timestamp callback, CONCURRENT_KERNEL only, each delivered record read, a
// thread flushing every 8 ms) from the process's start. CUPTI_ONLY_BUF_KB sets the buffer size
// (default 4, libvgpu's); at exit one stderr line counts buffers and records.
// Build: gcc -O2 -shared -fPIC -I/usr/local/cuda/include -o cupti_only.so cupti_only_preload.c
//        -L/usr/local/cuda/lib64 -lcupti -lpthread
// Run:   LD_LIBRARY_PATH=/usr/local/cuda/lib64 LD_PRELOAD=./cupti_only.so python3 ...
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { kBuffers = 512 };
static size_t bytes = 4096;
static uint8_t* pool;
static int free_list[kBuffers];
static int n_free;
static uint64_t records, buffers, requests_refused;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t CUPTIAPI Monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI Requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  pthread_mutex_lock(&mu);
  if (n_free > 0) {
    *buffer = pool + (size_t)free_list[--n_free] * bytes;
    *size = bytes;
  } else {
    *buffer = NULL;
    *size = 0;
    ++requests_refused;
  }
  pthread_mutex_unlock(&mu);
}

static void CUPTIAPI Completed(CUcontext c, uint32_t s, uint8_t* buffer, size_t size,
                               size_t valid) {
  (void)c, (void)s, (void)size;
  if (buffer == NULL) return;
  CUpti_Activity* r = NULL;
  uint64_t n = 0, sum = 0;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    const CUpti_ActivityKernel10* k = (const CUpti_ActivityKernel10*)r;
    sum += k->end - k->start;
    ++n;
  }
  pthread_mutex_lock(&mu);
  records += n;
  buffers += sum != 0 || n != 0;
  free_list[n_free++] = (int)((size_t)(buffer - pool) / bytes);
  pthread_mutex_unlock(&mu);
}

static void* Flusher(void* arg) {
  (void)arg;
  const struct timespec tick = {0, 8000000};
  for (;;) {
    nanosleep(&tick, NULL);
    cuptiActivityFlushAll(0);
  }
  return NULL;
}

static void Report(void) {
  pthread_mutex_lock(&mu);
  fprintf(stderr, "[cupti-only] buf_kb=%zu buffers=%llu records=%llu refused=%llu\n", bytes / 1024,
          (unsigned long long)buffers, (unsigned long long)records,
          (unsigned long long)requests_refused);
  pthread_mutex_unlock(&mu);
}

__attribute__((constructor)) static void Start(void) {
  const char* kb = getenv("CUPTI_ONLY_BUF_KB");
  if (kb != NULL && atoi(kb) > 0) bytes = (size_t)atoi(kb) * 1024;
  pool = malloc((size_t)kBuffers * bytes);
  if (pool == NULL) return;
  for (int i = 0; i < kBuffers; ++i) free_list[i] = i;
  n_free = kBuffers;
  if (cuptiActivityRegisterTimestampCallback(Monotonic) != CUPTI_SUCCESS ||
      cuptiActivityRegisterCallbacks(Requested, Completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(stderr, "[cupti-only] CUPTI setup failed\n");
    return;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, Flusher, NULL) == 0) pthread_detach(t);
  atexit(Report);
}
