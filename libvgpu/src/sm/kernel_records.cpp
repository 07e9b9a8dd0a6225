#include "kernel_records.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "clock.h"
#include "record_buffers.h"

extern "C" void* vgpu_real_dlsym(void* handle, const char* name);  // real_driver.h

namespace vgpu::sm::kernel_records {
namespace {

// The fields we read sit at the same offsets in every kernel record version since
// CUpti_ActivityKernel4 (CUDA 8); check them against the headers we build with.
static_assert(offsetof(CUpti_ActivityKernel10, start) == 16, "kernel record layout");
static_assert(offsetof(CUpti_ActivityKernel10, end) == 24, "kernel record layout");
static_assert(offsetof(CUpti_ActivityKernel10, deviceId) == 40, "kernel record layout");

// Buffers are sized by the launch rate (record_buffers.h); each has the largest size's room.
constexpr size_t kSlotBytes = kMaxRecordBuffer;
constexpr int kBuffers = 512;
constexpr int kQueue = 1 << 16;  // records between two drains (a drain every ~1 ms)

using RegisterCallbacksFn = CUptiResult (*)(CUpti_BuffersCallbackRequestFunc,
                                            CUpti_BuffersCallbackCompleteFunc);
using RegisterTimestampFn = CUptiResult (*)(CUpti_TimestampCallbackFunc);
using KindFn = CUptiResult (*)(CUpti_ActivityKind);
using FlushAllFn = CUptiResult (*)(uint32_t);
using NextRecordFn = CUptiResult (*)(uint8_t*, size_t, CUpti_Activity**);
using DroppedFn = CUptiResult (*)(CUcontext, uint32_t, size_t*);
using FinalizeFn = CUptiResult (*)();

struct Api {
  RegisterCallbacksFn register_callbacks;
  RegisterTimestampFn register_timestamp;
  KindFn enable;
  KindFn disable;
  FlushAllFn flush_all;
  NextRecordFn next_record;
  DroppedFn dropped;
  FinalizeFn finalize;  // optional: without it CUPTI stays attached once attached
};

constinit pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
constinit Api g_api{};
constinit bool g_tried = false;
constinit bool g_started = false;
constinit const char* g_why = nullptr;
constinit bool g_enabled = false;
// Our callbacks are registered (CUPTI is attached to the process). The measuring thread attaches
// and detaches; the statistics read the counters.
constinit bool g_attached = false;
constinit uint64_t g_attaches = 0;          // atomic
constinit int64_t g_attached_since_ns = 0;  // atomic: 0 while detached
constinit uint64_t g_attached_ns = 0;       // atomic: attached time before the current attach
constinit int g_taken = 0;                  // atomic
constinit const char* g_taken_by = nullptr;
using ClockFn = uint64_t (*)();
constinit ClockFn g_app_clock = nullptr;  // atomic: the application's CUPTI clock
constinit int g_keep_attached = 0;        // atomic: the application subscribed to callbacks
constinit bool g_forked = false;
// Buffers for CUPTI, and the records it delivered (both guarded by g_mu).
constinit uint8_t* g_pool = nullptr;
constinit int g_free[kBuffers]{};
constinit int g_free_count = 0;
constinit KernelRecord* g_queue = nullptr;
constinit uint32_t g_head = 0;
constinit uint32_t g_count = 0;
constinit uint64_t g_dropped = 0;
constinit uint64_t g_cupti_dropped = 0;    // atomic: counted by CUPTI (it had no buffer)
constinit bool g_realtime = false;         // records carry CLOCK_REALTIME (no timestamp callback)
constinit int64_t g_last_delivery_ns = 0;  // atomic: CUPTI handed a buffer back
constinit uint64_t g_deliveries = 0;       // atomic: buffers CUPTI handed back
constinit uint64_t g_unusable = 0;         // kernel records without a start before their end
constinit size_t g_buffer_bytes = kMinRecordBuffer;  // atomic: the size of the next buffer

// CLOCK_REALTIME minus CLOCK_MONOTONIC, now.
int64_t RealtimeOffsetNs() {
  timespec real{};
  clock_gettime(CLOCK_REALTIME, &real);
  const int64_t mono = NowNs();
  return static_cast<int64_t>(real.tv_sec) * 1'000'000'000 + real.tv_nsec - mono;
}

uint64_t CUPTIAPI MonotonicTimestamp() {
  return static_cast<uint64_t>(NowNs());
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  pthread_mutex_lock(&g_mu);
  if (g_free_count > 0) {
    *buffer = g_pool + static_cast<size_t>(g_free[--g_free_count]) * kSlotBytes;
    *size = __atomic_load_n(&g_buffer_bytes, __ATOMIC_RELAXED);
  } else {
    *buffer = nullptr;  // CUPTI drops records until a buffer comes back (counted as dropped)
    *size = 0;
  }
  pthread_mutex_unlock(&g_mu);
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (buffer == nullptr) return;
  __atomic_store_n(&g_last_delivery_ns, NowNs(), __ATOMIC_RELAXED);
  __atomic_fetch_add(&g_deliveries, 1, __ATOMIC_RELAXED);
  CUpti_Activity* record = nullptr;
  // Records are on our CLOCK_MONOTONIC callback, on CLOCK_REALTIME (no callback), or on a clock
  // the application registered since: shift them back by that clock's offset, sampled now.
  const ClockFn app_clock = __atomic_load_n(&g_app_clock, __ATOMIC_ACQUIRE);
  const int64_t shift = app_clock != nullptr ? static_cast<int64_t>(app_clock()) - NowNs()
                        : g_realtime         ? RealtimeOffsetNs()
                                             : 0;
  pthread_mutex_lock(&g_mu);
  while (valid > 0 && g_api.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    if (k->end <= k->start) {
      ++g_unusable;
      continue;
    }
    if (g_count == kQueue) {
      ++g_dropped;
      continue;
    }
    g_queue[(g_head + g_count) % kQueue] =
        KernelRecord{static_cast<int32_t>(k->deviceId), static_cast<int64_t>(k->start) - shift,
                     static_cast<int64_t>(k->end) - shift};
    ++g_count;
  }
  const auto index = static_cast<size_t>(buffer - g_pool) / kSlotBytes;
  if (buffer >= g_pool && index < static_cast<size_t>(kBuffers))
    g_free[g_free_count++] = static_cast<int>(index);
  pthread_mutex_unlock(&g_mu);
}

// libcupti already in the process (a framework loaded it), else the configured one, else the
// library path, else the toolkit's. Never a second copy beside one the process loaded.
void* OpenLibrary(const char* configured) {
  static const char* const kSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  for (const char* name : kSonames) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) return h;
  }
  if (configured != nullptr && configured[0] != '\0')
    return dlopen(configured, RTLD_NOW | RTLD_LOCAL);
  for (const char* name : kSonames) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  static const char* const kToolkit[] = {
      "/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
      "/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"};
  for (const char* path : kToolkit) {
    if (void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

// libvgpu's dlsym override hands out its own cupti* guards (cupti_guard.cpp): our lookups go to
// the real dlsym, so that our calls reach libcupti itself.
template <typename Fn>
Fn Symbol(void* handle, const char* name) {
  return reinterpret_cast<Fn>(vgpu_real_dlsym(handle, name));
}

bool StartLocked(const char* configured) {
  if (configured != nullptr && strcmp(configured, "off") == 0) {
    g_why = "VGPU_CUPTI_LIBRARY=off";
    return false;
  }
  void* handle = OpenLibrary(configured);
  if (handle == nullptr) {
    g_why = "libcupti was not found (set VGPU_CUPTI_LIBRARY to its path)";
    return false;
  }
  Api api{};
  api.register_callbacks = Symbol<RegisterCallbacksFn>(handle, "cuptiActivityRegisterCallbacks");
  api.register_timestamp =
      Symbol<RegisterTimestampFn>(handle, "cuptiActivityRegisterTimestampCallback");
  api.enable = Symbol<KindFn>(handle, "cuptiActivityEnable");
  api.disable = Symbol<KindFn>(handle, "cuptiActivityDisable");
  api.flush_all = Symbol<FlushAllFn>(handle, "cuptiActivityFlushAll");
  api.next_record = Symbol<NextRecordFn>(handle, "cuptiActivityGetNextRecord");
  api.dropped = Symbol<DroppedFn>(handle, "cuptiActivityGetNumDroppedRecords");
  api.finalize = Symbol<FinalizeFn>(handle, "cuptiFinalize");
  if (api.register_callbacks == nullptr || api.enable == nullptr || api.disable == nullptr ||
      api.flush_all == nullptr || api.next_record == nullptr) {
    g_why = "libcupti lacks the activity API";
    return false;
  }
  // 32 MB of address space; only the pages CUPTI writes to are ever backed, and the free list
  // hands the same few buffers out again (last in, first out).
  const size_t pool_bytes = kBuffers * kSlotBytes;
  const size_t queue_bytes = kQueue * sizeof(KernelRecord);
  void* pool = mmap(nullptr, pool_bytes + queue_bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (pool == MAP_FAILED) {
    g_why = "no memory for CUPTI's buffers";
    return false;
  }
  g_api = api;
  g_pool = static_cast<uint8_t*>(pool);
  g_queue = reinterpret_cast<KernelRecord*>(g_pool + pool_bytes);
  for (int i = 0; i < kBuffers; ++i) g_free[i] = i;
  g_free_count = kBuffers;
  return true;
}

// CUPTI starts its worker thread from inside the calls that attach it or turn records on, which
// the measuring thread makes, and a new thread takes the name of the thread that made it. Named
// `vgpu-cupti` for those calls (rare: attaches and windows), CUPTI's thread shows as itself in
// top -H and /proc/PID/task/*/comm, not as a second `vgpu-sm` whose wake-ups would be taken for
// the measuring thread's.
class NamedForCupti {
 public:
  NamedForCupti() {
    renamed_ =
        prctl(PR_GET_NAME, saved_, 0, 0, 0) == 0 && prctl(PR_SET_NAME, "vgpu-cupti", 0, 0, 0) == 0;
  }
  ~NamedForCupti() {
    if (renamed_) (void)prctl(PR_SET_NAME, saved_, 0, 0, 0);
  }
  NamedForCupti(const NamedForCupti&) = delete;
  NamedForCupti& operator=(const NamedForCupti&) = delete;

 private:
  char saved_[16] = {};  // the kernel's TASK_COMM_LEN
  bool renamed_ = false;
};

// What CUPTI dropped since we last asked (it counts from the last call on); only while attached:
// any CUPTI call attaches CUPTI again.
void CollectCuptiDropped() {
  size_t cupti = 0;
  if (g_api.dropped != nullptr && g_api.dropped(nullptr, 0, &cupti) == CUPTI_SUCCESS && cupti > 0)
    __atomic_fetch_add(&g_cupti_dropped, static_cast<uint64_t>(cupti), __ATOMIC_RELAXED);
}

void NoteAttached(bool attached) {
  const int64_t now = NowNs();
  if (attached) {
    __atomic_fetch_add(&g_attaches, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&g_attached_since_ns, now, __ATOMIC_RELAXED);
  } else {
    const int64_t since = __atomic_exchange_n(&g_attached_since_ns, 0, __ATOMIC_RELAXED);
    if (since != 0)
      __atomic_fetch_add(&g_attached_ns, static_cast<uint64_t>(now - since), __ATOMIC_RELAXED);
  }
  __atomic_store_n(&g_attached, attached, __ATOMIC_RELEASE);
}

}  // namespace

bool Start(const char* configured, const char** why) {
  pthread_mutex_lock(&g_mu);
  const bool first = !g_tried;
  if (first) {
    g_tried = true;
    if (g_forked) {
      g_why = "CUPTI does not survive fork";
    } else if (__atomic_load_n(&g_taken, __ATOMIC_ACQUIRE) != 0) {
      g_why = nullptr;  // said below, with the call
    } else {
      g_started = StartLocked(configured);
    }
  }
  pthread_mutex_unlock(&g_mu);
  if (first && g_started && !Attach()) {
    g_why = "CUPTI refused our activity callbacks";
    g_started = false;
  }
  pthread_mutex_lock(&g_mu);
  const bool ok = g_started && __atomic_load_n(&g_taken, __ATOMIC_ACQUIRE) == 0;
  if (!ok && why != nullptr) {
    static char taken[128];
    (void)snprintf(taken, sizeof(taken), "the application called %s, a profiler?", TakenBy());
    *why = g_why != nullptr && !TakenByApplication() ? g_why : taken;
  }
  pthread_mutex_unlock(&g_mu);
  return ok;
}

// Attach and Detach are not under g_mu either: CUPTI hands buffers back while it detaches.
bool Attach() {
  if (!g_started || TakenByApplication()) return false;
  if (Attached()) return true;
  const NamedForCupti named;
  // The clock first: records made before it would be on CUPTI's default (CLOCK_REALTIME). A
  // CUPTI without the callback (before CUDA 12.6) keeps that clock: convert by the clocks' offset.
  g_realtime = g_api.register_timestamp == nullptr ||
               g_api.register_timestamp(MonotonicTimestamp) != CUPTI_SUCCESS;
  if (g_api.register_callbacks(BufferRequested, BufferCompleted) != CUPTI_SUCCESS) return false;
  NoteAttached(true);
  return true;
}

bool Detach() {
  if (!g_started || TakenByApplication()) return false;
  if (!Attached()) return true;
  // An application clock is kept only while we stay attached (attaching registers ours again).
  if (g_api.finalize == nullptr || __atomic_load_n(&g_app_clock, __ATOMIC_ACQUIRE) != nullptr ||
      __atomic_load_n(&g_keep_attached, __ATOMIC_ACQUIRE) != 0)
    return false;
  if (g_enabled && g_api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS)
    g_enabled = false;
  (void)g_api.flush_all(0);  // every complete record comes back before CUPTI lets go
  CollectCuptiDropped();
  if (g_api.finalize() != CUPTI_SUCCESS) return false;
  g_enabled = false;
  NoteAttached(false);
  return true;
}

bool Attached() {
  return __atomic_load_n(&g_attached, __ATOMIC_ACQUIRE);
}

AttachStats AttachStatistics() {
  const int64_t since = __atomic_load_n(&g_attached_since_ns, __ATOMIC_RELAXED);
  uint64_t attached = __atomic_load_n(&g_attached_ns, __ATOMIC_RELAXED);
  if (since != 0) attached += static_cast<uint64_t>(NowNs() - since);
  return AttachStats{__atomic_load_n(&g_attaches, __ATOMIC_RELAXED), attached};
}

bool SetEnabled(bool on) {
  // Not under g_mu: CUPTI may deliver buffers (BufferCompleted takes g_mu) from inside these.
  if (!g_started || TakenByApplication()) return false;
  if (on == g_enabled && (!on || Attached())) return true;
  if (on && !Attach()) return false;
  const NamedForCupti named;
  const CUptiResult rc = on ? g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                            : g_api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (rc != CUPTI_SUCCESS) return false;
  g_enabled = on;
  return true;
}

bool Enabled() {
  return g_enabled;
}

void SetLaunchRate(double launches_per_s) {
  __atomic_store_n(&g_buffer_bytes, RecordBufferBytes(launches_per_s), __ATOMIC_RELAXED);
}

int64_t LastDeliveryNs() {
  return __atomic_load_n(&g_last_delivery_ns, __ATOMIC_RELAXED);
}

void Flush() {
  if (!g_started || !Attached() || TakenByApplication()) return;
  g_api.flush_all(0);
  CollectCuptiDropped();
}

int Drain(KernelRecord* out, int max) {
  pthread_mutex_lock(&g_mu);
  int n = 0;
  while (n < max && g_count > 0) {
    out[n++] = g_queue[g_head];
    g_head = (g_head + 1) % kQueue;
    --g_count;
  }
  pthread_mutex_unlock(&g_mu);
  return n;
}

uint64_t Dropped() {
  pthread_mutex_lock(&g_mu);
  const uint64_t n = g_dropped;
  pthread_mutex_unlock(&g_mu);
  return n + __atomic_load_n(&g_cupti_dropped, __ATOMIC_RELAXED);
}

uint64_t Deliveries() {
  return __atomic_load_n(&g_deliveries, __ATOMIC_RELAXED);
}

BufferStats BufferStatistics() {
  pthread_mutex_lock(&g_mu);
  const BufferStats s{__atomic_load_n(&g_deliveries, __ATOMIC_RELAXED),
                      g_pool != nullptr ? static_cast<uint64_t>(kBuffers - g_free_count) : 0,
                      g_unusable};
  pthread_mutex_unlock(&g_mu);
  return s;
}

void MarkTakenByApplication(const char* call) {
  if (__atomic_exchange_n(&g_taken, 1, __ATOMIC_ACQ_REL) == 0) g_taken_by = call;
}

const char* TakenBy() {
  return TakenByApplication() && g_taken_by != nullptr ? g_taken_by : "?";
}

void KeepAttached() {
  __atomic_store_n(&g_keep_attached, 1, __ATOMIC_RELEASE);
}

void ApplicationClock(uint64_t (*clock)()) {
  __atomic_store_n(&g_app_clock, clock, __ATOMIC_RELEASE);
}

void ApplicationDisabledKernels() {
  g_enabled = false;
}

bool TakenByApplication() {
  return __atomic_load_n(&g_taken, __ATOMIC_ACQUIRE) != 0;
}

void ForgetAfterFork() {
  pthread_mutex_init(&g_mu, nullptr);
  g_forked = true;
  g_tried = false;
  g_started = false;
  g_enabled = false;
  g_attached = false;
  g_attached_since_ns = 0;
  g_count = 0;
  g_last_delivery_ns = 0;
}

}  // namespace vgpu::sm::kernel_records
