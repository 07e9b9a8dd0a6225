// CUPTI's kernel records set up the way libvgpu's SM limiter sets them up (buffers from a pool, the
// CLOCK_MONOTONIC timestamp callback, CONCURRENT_KERNEL only, every delivered record read), without
// libvgpu: what CUPTI itself costs a PyTorch loop. Two uses:
// - cupti_states.py loads it with ctypes and switches the kind on and off from Python (shim_*).
// - Preloaded with CUPTI_SHIM_PRELOAD=1, it turns records on at the process's start, with a thread
//   flushing every 8 ms as the limiter's measuring thread does, and prints one stderr line at exit
//   (2026-11-29; the journal and that call's script in git: d8b3fc2's docs/gpu-results.md,
//   bench/gpu/runs/2026-11-29/call29l.sh).
// CUPTI_SHIM_BUF_KB sets the buffer size (default 4, libvgpu's size until 2026-11-29).
// Build: gcc -O2 -shared -fPIC -I/usr/local/cuda/include -o cupti_states_shim.so
//   cupti_states_shim.c -L/usr/local/cuda/lib64 -lcupti -lpthread
// Preload: LD_LIBRARY_PATH=/usr/local/cuda/lib64 CUPTI_SHIM_PRELOAD=1
// LD_PRELOAD=./cupti_states_shim.so
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
static uint64_t records, buffers, refused, busy_ns;
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
    ++refused;
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
  busy_ns += sum;
  buffers += n != 0;
  free_list[n_free++] = (int)((size_t)(buffer - pool) / bytes);
  pthread_mutex_unlock(&mu);
}

int shim_start(int timestamp_callback) {
  const char* kb = getenv("CUPTI_SHIM_BUF_KB");
  if (kb != NULL && atoi(kb) > 0) bytes = (size_t)atoi(kb) * 1024;
  pool = malloc((size_t)kBuffers * bytes);
  if (pool == NULL) return -3;
  for (int i = 0; i < kBuffers; ++i) free_list[i] = i;
  n_free = kBuffers;
  if (timestamp_callback && cuptiActivityRegisterTimestampCallback(Monotonic) != CUPTI_SUCCESS)
    return -1;
  return cuptiActivityRegisterCallbacks(Requested, Completed) == CUPTI_SUCCESS ? 0 : -2;
}

int shim_enable(int on) {
  return (on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
             : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) == CUPTI_SUCCESS
             ? 0
             : -1;
}

int shim_flush(void) {
  return cuptiActivityFlushAll(0) == CUPTI_SUCCESS ? 0 : -1;
}

uint64_t shim_records(void) {
  pthread_mutex_lock(&mu);
  uint64_t n = records;
  pthread_mutex_unlock(&mu);
  return n;
}

static void* Flusher(void* arg) {
  (void)arg;
  const struct timespec tick = {0, 8000000};
  for (;;) {
    nanosleep(&tick, NULL);
    shim_flush();
  }
  return NULL;
}

static void Report(void) {
  pthread_mutex_lock(&mu);
  fprintf(stderr, "[cupti-shim] buf_kb=%zu buffers=%llu records=%llu busy_ms=%.1f refused=%llu\n",
          bytes / 1024, (unsigned long long)buffers, (unsigned long long)records, busy_ns / 1e6,
          (unsigned long long)refused);
  pthread_mutex_unlock(&mu);
}

__attribute__((constructor)) static void PreloadStart(void) {
  const char* on = getenv("CUPTI_SHIM_PRELOAD");
  if (on == NULL || on[0] != '1') return;
  if (shim_start(1) != 0 || shim_enable(1) != 0) {
    fprintf(stderr, "[cupti-shim] CUPTI setup failed\n");
    return;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, Flusher, NULL) == 0) pthread_detach(t);
  atexit(Report);
}
