/* host_costs: what the ingredients of libvgpu's limited launch path cost on this host.
 *
 * The limited path's own cost per launch differs by host (184 ns on one H100 machine, ~400 ns on
 * another, 40 ns against the fake driver in CI); this times each ingredient alone, so that a slow
 * one shows: the clock read, the driver's cuCtxGetDevice and cuCtxGetCurrent, an uncontended
 * mutex, a read of a cache line another core wrote, cuEventQuery of a completed event,
 * cuEventRecord. Prints one JSON line of ns per call (medians of 15 rounds).
 *
 *   gcc -O2 -I/usr/local/cuda/include host_costs.c -lcuda -lpthread -o host_costs && ./host_costs
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

enum { kRounds = 15, kCalls = 20000 };
static CUevent g_event;
static CUstream g_stream;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static volatile long g_shared_line[16] __attribute__((aligned(64)));
static volatile int g_stop;
static volatile long g_sink;

static void* writer(void* arg) {
  (void)arg;
  while (!g_stop) g_shared_line[0]++;
  return NULL;
}

static void op_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  g_sink += ts.tv_nsec;
}
static void op_ctx_get_device(void) {
  CUdevice d;
  cuCtxGetDevice(&d);
  g_sink += d;
}
static void op_ctx_get_current(void) {
  CUcontext c;
  cuCtxGetCurrent(&c);
  g_sink += (long)(c != NULL);
}
static void op_mutex(void) {
  pthread_mutex_lock(&g_mu);
  g_sink++;
  pthread_mutex_unlock(&g_mu);
}
static void op_shared_read(void) {
  g_sink += g_shared_line[0];
}
static void op_event_query(void) {
  g_sink += cuEventQuery(g_event);
}
static void op_event_record(void) {
  g_sink += cuEventRecord(g_event, g_stream);
}

static double time_op(void (*op)(void), int calls) {
  double per[kRounds];
  for (int r = 0; r < kRounds; ++r) {
    double t0 = now_ns();
    for (int i = 0; i < calls; ++i) op();
    per[r] = (now_ns() - t0) / calls;
  }
  qsort(per, kRounds, sizeof(double), cmp_double);
  return per[kRounds / 2];
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
      cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
      cuStreamCreate(&g_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      cuEventCreate(&g_event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    printf("{\"error\": \"CUDA setup failed\"}\n");
    return 1;
  }
  cuEventRecord(g_event, g_stream);
  cuStreamSynchronize(g_stream);
  printf(
      "{\"clock_gettime\": %.1f, \"cuCtxGetDevice\": %.1f, \"cuCtxGetCurrent\": %.1f, "
      "\"mutex_pair\": %.1f, \"cuEventQuery_done\": %.1f, ",
      time_op(op_clock, kCalls), time_op(op_ctx_get_device, kCalls),
      time_op(op_ctx_get_current, kCalls), time_op(op_mutex, kCalls),
      time_op(op_event_query, kCalls));
  double record = time_op(op_event_record, 2000);
  cuStreamSynchronize(g_stream);
  pthread_t th;
  pthread_create(&th, NULL, writer, NULL);
  double shared = time_op(op_shared_read, kCalls);
  g_stop = 1;
  pthread_join(th, NULL);
  printf("\"cuEventRecord\": %.1f, \"read_line_another_core_writes\": %.1f}\n", record, shared);
  return 0;
}
