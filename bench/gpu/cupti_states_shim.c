// What CUPTI's state costs a PyTorch loop's launches (cupti_states.py loads this with ctypes):
// the same activity setup libvgpu's SM limiter uses (4 KB buffers from a pool, the CLOCK_MONOTONIC
// timestamp callback, CONCURRENT_KERNEL only), with the kind switched on and off from Python.
// Build: gcc -O2 -shared -fPIC -I/usr/local/cuda/include -o cupti_states_shim.so
//   cupti_states_shim.c -L/usr/local/cuda/lib64 -lcupti
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

enum { kBytes = 4096, kBuffers = 512 };
static uint8_t* pool;
static int free_list[kBuffers];
static int n_free;
static uint64_t records;
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
    *buffer = pool + (size_t)free_list[--n_free] * kBytes;
    *size = kBytes;
  } else {
    *buffer = NULL;
    *size = 0;
  }
  pthread_mutex_unlock(&mu);
}

static void CUPTIAPI Completed(CUcontext c, uint32_t s, uint8_t* buffer, size_t size,
                               size_t valid) {
  (void)c, (void)s, (void)size;
  CUpti_Activity* r = NULL;
  uint64_t n = 0;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) ++n;
  pthread_mutex_lock(&mu);
  records += n;
  free_list[n_free++] = (int)((buffer - pool) / kBytes);
  pthread_mutex_unlock(&mu);
}

int shim_start(int timestamp_callback) {
  pool = malloc((size_t)kBuffers * kBytes);
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
