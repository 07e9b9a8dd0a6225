// What the SM limiter's measurement can rest on, measured on a real GPU (no libvgpu involved):
//   overhead  — host cost per launch of CUPTI's CONCURRENT_KERNEL activity records, the cost and
//               delivery latency of cuptiActivityFlushAll, which thread receives the buffers, and
//               how a record's start relates to the host clock (timestamp callback:
//               CLOCK_MONOTONIC)
//   tenant    — one tenant of a two-process run: launches a fixed-work kernel in a loop and writes
//               every kernel record (start, end in CLOCK_MONOTONIC ns) to a file, so that
//               cupti_overlap.py can compare attribution rules with the work each tenant did.
// Build: nvcc -O2 -o cupti_probe cupti_probe.cu -lcuda -lcupti (CUPTI from the toolkit or wheel).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <vector>

#define CHECK_CUPTI(call)                                       \
  do {                                                          \
    CUptiResult _r = (call);                                    \
    if (_r != CUPTI_SUCCESS) {                                  \
      const char* _s = nullptr;                                 \
      cuptiGetResultString(_r, &_s);                            \
      fprintf(stderr, "%s failed: %s\n", #call, _s ? _s : "?"); \
      exit(1);                                                  \
    }                                                           \
  } while (0)

static int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
static uint64_t CUPTIAPI MonotonicTimestamp() {
  return uint64_t(NowNs());
}

__global__ void Work(int iters, float* sink) {
  float a = threadIdx.x * 0.001f;
  for (int i = 0; i < iters; ++i) a = a * 0.999999f + 0.5f;
  if (a == -1.0f) sink[0] = a;
}
__global__ void Empty() {}

struct Rec {
  int64_t start, end, arrived;
  uint32_t stream;
};
static std::vector<Rec> g_recs;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static std::atomic<long> g_buffers{0};
static std::atomic<long> g_cb_same_thread{0};
static pthread_t g_launcher;
static size_t g_buf_size = 64 * 1024;

static void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, g_buf_size));
  *size = g_buf_size;
  *max_records = 0;
}
static void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  const int64_t now = NowNs();
  ++g_buffers;
  if (pthread_equal(pthread_self(), g_launcher)) ++g_cb_same_thread;
  CUpti_Activity* record = nullptr;
  pthread_mutex_lock(&g_mu);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
      g_recs.push_back(Rec{int64_t(k->start), int64_t(k->end), now, k->streamId});
    }
  }
  pthread_mutex_unlock(&g_mu);
  free(buffer);
}

static void StartCupti(uint32_t flush_period_ms) {
  CHECK_CUPTI(cuptiActivityRegisterTimestampCallback(MonotonicTimestamp));
  CHECK_CUPTI(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
  CHECK_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  if (flush_period_ms > 0) CHECK_CUPTI(cuptiActivityFlushPeriod(flush_period_ms));
}

static double Pct(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return double(v[std::min(v.size() - 1, size_t(p * (v.size() - 1)))]);
}

// Empty-kernel launch rate with and without records; flush costs and latency.
static int Overhead(int argc, char** argv) {
  const int launches = argc > 2 ? atoi(argv[2]) : 200000;
  const char* mode = argc > 3 ? argv[3] : "plain";  // plain | cupti | flush1 | flush5 | period
  g_launcher = pthread_self();
  if (strcmp(mode, "plain") != 0) StartCupti(strcmp(mode, "period") == 0 ? 1 : 0);
  cudaFree(nullptr);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (int i = 0; i < 2000; ++i) Empty<<<1, 32, 0, s>>>();
  cudaStreamSynchronize(s);
  const int64_t flush_every = strcmp(mode, "flush1") == 0   ? 1000000
                              : strcmp(mode, "flush5") == 0 ? 5000000
                                                            : 0;
  std::vector<int64_t> flush_cost;
  int64_t last_flush = NowNs();
  const int64_t t0 = NowNs();
  for (int i = 0; i < launches; ++i) {
    Empty<<<1, 32, 0, s>>>();
    if (flush_every > 0) {
      int64_t now = NowNs();
      if (now - last_flush >= flush_every) {
        cuptiActivityFlushAll(0);
        int64_t after = NowNs();
        flush_cost.push_back(after - now);
        last_flush = after;
      }
    }
  }
  const int64_t t1 = NowNs();
  cudaStreamSynchronize(s);
  if (strcmp(mode, "plain") != 0) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<int64_t> lat, dur;
  for (const Rec& r : g_recs) {
    lat.push_back(r.arrived - r.end);
    dur.push_back(r.end - r.start);
  }
  printf(
      "overhead mode=%s launches=%d ns_per_launch=%.1f records=%zu buffers=%ld cb_on_launcher=%ld "
      "flushes=%zu flush_ns_p50=%.0f flush_ns_p99=%.0f latency_us_p50=%.0f latency_us_p99=%.0f "
      "kernel_ns_p50=%.0f\n",
      mode, launches, double(t1 - t0) / launches, g_recs.size(), g_buffers.load(),
      g_cb_same_thread.load(), flush_cost.size(), Pct(flush_cost, 0.5), Pct(flush_cost, 0.99),
      Pct(lat, 0.5) / 1e3, Pct(lat, 0.99) / 1e3, Pct(dur, 0.5));
  // Alignment with the host clock: a launch onto an idle GPU starts a few microseconds later.
  if (strcmp(mode, "plain") != 0) {
    g_recs.clear();
    std::vector<int64_t> host;
    for (int i = 0; i < 200; ++i) {
      host.push_back(NowNs());
      Work<<<1, 32, 0, s>>>(1000, nullptr);
      cudaStreamSynchronize(s);
      usleep(200);
    }
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::vector<int64_t> delay;
    for (size_t i = 0; i < g_recs.size() && i < host.size(); ++i)
      delay.push_back(g_recs[i].start - host[i]);
    printf("alignment start_minus_host_launch_us p1=%.1f p50=%.1f p99=%.1f (n=%zu)\n",
           Pct(delay, 0.01) / 1e3, Pct(delay, 0.5) / 1e3, Pct(delay, 0.99) / 1e3, delay.size());
  }
  return 0;
}

// One tenant: kernels of `iters` work with `blocks` blocks, `gap_us` of host time between launches,
// synchronising every `sync_every` launches, for `seconds`; records to `out`.
static int Tenant(int argc, char** argv) {
  if (argc < 8) {
    fprintf(stderr, "tenant BLOCKS ITERS GAP_US SYNC_EVERY SECONDS OUT\n");
    return 2;
  }
  const int blocks = atoi(argv[2]);
  const int iters = atoi(argv[3]);
  const int gap_us = atoi(argv[4]);
  const int sync_every = atoi(argv[5]);
  const double seconds = atof(argv[6]);
  const char* out = argv[7];
  g_launcher = pthread_self();
  StartCupti(0);
  cudaFree(nullptr);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  for (int i = 0; i < 20; ++i) Work<<<blocks, 256, 0, s>>>(iters, nullptr);
  cudaStreamSynchronize(s);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&g_mu);
  g_recs.clear();
  pthread_mutex_unlock(&g_mu);
  const int64_t t0 = NowNs();
  const int64_t deadline = t0 + int64_t(seconds * 1e9);
  long launched = 0;
  int64_t last_flush = t0;
  while (NowNs() < deadline) {
    Work<<<blocks, 256, 0, s>>>(iters, nullptr);
    ++launched;
    if (sync_every > 0 && launched % sync_every == 0) cudaStreamSynchronize(s);
    if (gap_us > 0) {
      const int64_t until = NowNs() + gap_us * 1000LL;
      while (NowNs() < until) {
      }
    }
    if (NowNs() - last_flush > 4000000) {
      cuptiActivityFlushAll(0);
      last_flush = NowNs();
    }
  }
  cudaStreamSynchronize(s);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::vector<int64_t> lat;
  for (const Rec& r : g_recs) lat.push_back(r.arrived - r.end);
  printf(
      "tenant blocks=%d iters=%d launched=%ld records=%zu latency_us_p50=%.0f p90=%.0f p99=%.0f "
      "max=%.0f\n",
      blocks, iters, launched, g_recs.size(), Pct(lat, 0.5) / 1e3, Pct(lat, 0.9) / 1e3,
      Pct(lat, 0.99) / 1e3, Pct(lat, 1.0) / 1e3);
  FILE* f = fopen(out, "w");
  if (!f) return 1;
  fprintf(f, "# t0 %lld deadline %lld launched %ld blocks %d iters %d gap_us %d\n", (long long)t0,
          (long long)deadline, launched, blocks, iters, gap_us);
  for (const Rec& r : g_recs) fprintf(f, "%lld %lld\n", (long long)r.start, (long long)r.end);
  fclose(f);
  return 0;
}

// Cost of turning the kernel kind on and off while a launch loop runs (sampled measurement).
static int Toggle(int argc, char** argv) {
  const int seconds = argc > 2 ? atoi(argv[2]) : 3;
  g_launcher = pthread_self();
  CHECK_CUPTI(cuptiActivityRegisterTimestampCallback(MonotonicTimestamp));
  CHECK_CUPTI(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted));
  cudaFree(nullptr);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  std::vector<int64_t> on_cost, off_cost;
  const int64_t end = NowNs() + seconds * 1000000000LL;
  int64_t next = NowNs();
  bool on = false;
  long launched = 0;
  int64_t t0 = NowNs();
  while (NowNs() < end) {
    Empty<<<1, 32, 0, s>>>();
    ++launched;
    if (NowNs() >= next) {
      const int64_t a = NowNs();
      if (on) {
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cuptiActivityFlushAll(0);
      } else {
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      }
      (on ? off_cost : on_cost).push_back(NowNs() - a);
      on = !on;
      next = NowNs() + (on ? 50000000 : 950000000);
    }
  }
  cudaStreamSynchronize(s);
  printf(
      "toggle launches_per_s=%.0f enable_us_p50=%.0f max=%.0f disable_flush_us_p50=%.0f max=%.0f "
      "records=%zu\n",
      launched / ((NowNs() - t0) / 1e9), Pct(on_cost, 0.5) / 1e3, Pct(on_cost, 1.0) / 1e3,
      Pct(off_cost, 0.5) / 1e3, Pct(off_cost, 1.0) / 1e3, g_recs.size());
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cupti_probe overhead [LAUNCHES MODE] | tenant ...\n");
    return 2;
  }
  if (strcmp(argv[1], "overhead") == 0) return Overhead(argc, argv);
  if (strcmp(argv[1], "tenant") == 0) return Tenant(argc, argv);
  if (strcmp(argv[1], "toggle") == 0) return Toggle(argc, argv);
  return 2;
}
