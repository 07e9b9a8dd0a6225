#include "sim_gpu.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

namespace vgpu::sm::testing {
namespace {

constexpr int kMaxStreams = 8;
constexpr int kMaxEvents = 1024;

struct SimEvent {
  bool used;
  int64_t ts_ns;
};

SimGpuFile* g_gpu = nullptr;
int g_tenant = 0;
bool g_stream_used[kMaxStreams];
CUstream g_stream_keys[kMaxStreams];
int64_t g_stream_tail[kMaxStreams];
SimEvent g_events[kMaxEvents];

int64_t& TailOf(CUstream stream) {
  for (int i = 0; i < kMaxStreams; ++i) {
    if (g_stream_used[i] && g_stream_keys[i] == stream) return g_stream_tail[i];
  }
  for (int i = 0; i < kMaxStreams; ++i) {
    if (!g_stream_used[i]) {
      g_stream_used[i] = true;
      g_stream_keys[i] = stream;
      g_stream_tail[i] = 0;
      return g_stream_tail[i];
    }
  }
  return g_stream_tail[0];
}

void SleepUntil(int64_t deadline_ns) {
  int64_t now = SimNowNs();
  if (deadline_ns <= now) return;
  int64_t ns = deadline_ns - now;
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

SimEvent* EventOf(CUevent event) {
  return reinterpret_cast<SimEvent*>(event);
}

CUresult CtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult DeviceGetUuid(CUuuid* uuid, CUdevice) {
  memset(uuid, 0x5a, sizeof(*uuid));
  return CUDA_SUCCESS;
}
CUresult EventCreate(CUevent* event, unsigned int) {
  for (SimEvent& e : g_events) {
    if (!e.used) {
      e.used = true;
      e.ts_ns = 0;
      *event = reinterpret_cast<CUevent>(&e);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult EventRecord(CUevent event, CUstream stream) {
  int64_t tail = TailOf(stream);
  int64_t now = SimNowNs();
  EventOf(event)->ts_ns = tail > now ? tail : now;
  return CUDA_SUCCESS;
}
CUresult EventQuery(CUevent event) {
  return SimNowNs() >= EventOf(event)->ts_ns ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
CUresult EventElapsed(float* ms, CUevent start, CUevent end) {
  *ms = static_cast<float>(static_cast<double>(EventOf(end)->ts_ns - EventOf(start)->ts_ns) / 1e6);
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent event) {
  EventOf(event)->used = false;
  return CUDA_SUCCESS;
}

}  // namespace

int64_t SimNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool SimCreate(const char* path, int32_t sms, int64_t window_start_ns, int64_t window_end_ns) {
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  SimGpuFile file{};
  file.sms = sms;
  file.window_start_ns = window_start_ns;
  file.window_end_ns = window_end_ns;
  bool ok = write(fd, &file, sizeof(file)) == static_cast<ssize_t>(sizeof(file));
  close(fd);
  return ok;
}

bool SimRead(const char* path, SimGpuFile* out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = read(fd, out, sizeof(*out)) == static_cast<ssize_t>(sizeof(*out));
  close(fd);
  return ok;
}

bool SimAttach(const char* path, int tenant, VgpuSmDriver* driver) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  void* map = mmap(nullptr, sizeof(SimGpuFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED || tenant < 0 || tenant >= kSimMaxTenants) return false;
  g_gpu = static_cast<SimGpuFile*>(map);
  g_tenant = tenant;
  driver->ctx_get_device = CtxGetDevice;
  driver->device_get_uuid = DeviceGetUuid;
  driver->event_create = EventCreate;
  driver->event_record = EventRecord;
  driver->event_query = EventQuery;
  driver->event_elapsed_time = EventElapsed;
  driver->event_destroy = EventDestroy;
  return true;
}

CUresult SimLaunch(CUstream stream, int64_t ns_per_wave, int64_t blocks) {
  int64_t sms = g_gpu->sms > 0 ? g_gpu->sms : 1;
  int64_t duration = ns_per_wave * ((blocks + sms - 1) / sms);
  int64_t& tail = TailOf(stream);
  int64_t now = SimNowNs();
  int64_t old = __atomic_load_n(&g_gpu->free_at_ns, __ATOMIC_RELAXED);
  int64_t start = 0;
  int64_t end = 0;
  do {
    start = now;
    if (old > start) start = old;
    if (tail > start) start = tail;
    end = start + duration;
  } while (!__atomic_compare_exchange_n(&g_gpu->free_at_ns, &old, end, true, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED));
  tail = end;
  int64_t lo = start > g_gpu->window_start_ns ? start : g_gpu->window_start_ns;
  int64_t hi = end < g_gpu->window_end_ns ? end : g_gpu->window_end_ns;
  if (hi > lo) __atomic_fetch_add(&g_gpu->service_ns[g_tenant], hi - lo, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

void SimSynchronize(CUstream stream) {
  SleepUntil(TailOf(stream));
}

int64_t SimQueuedAheadNs(CUstream stream) {
  int64_t ahead = TailOf(stream) - SimNowNs();
  return ahead > 0 ? ahead : 0;
}

}  // namespace vgpu::sm::testing
