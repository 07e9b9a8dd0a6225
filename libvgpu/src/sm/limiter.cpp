// The launch path of the SM limiter (sm_limit.h's hook points): the gate. Design: docs/sm-limit.md.
//
// A launch on a limited device reads the node monitor's flag and the container's budget word and
// goes on at once unless the budget is in debt; only then does the launching thread wait, in short
// sleeps with no lock held. It never waits for another tenant: the GPU time-slices the contexts of
// different processes by itself. Measuring happens on the measuring thread (sampler.cpp); the
// launch path only records a CUDA event now and then (event_marks.h) and counts.
// Linked into libvgpu.so: no libstdc++, no exceptions, no allocation.

#include "limiter.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "budget.h"
#include "clock.h"
#include "kernel_records.h"
#include "log.h"
#include "turns.h"

int vgpu_sm_any_limited = 0;

namespace vgpu::sm {

constinit Device g_devices[kMaxDevices]{};
constinit VgpuSmDriver g_driver{};
constinit VgpuSmConfig g_config{};

namespace {

constinit pthread_mutex_t g_init_mu = PTHREAD_MUTEX_INITIALIZER;
constinit bool g_initialised = false;
constinit bool g_one_device = false;  // the process sees one CUDA device (set once, at init)
constinit int g_captures_active = 0;  // atomic

// What the before-launch hook decided, for the after-launch hook of the same launch (same
// thread, right after the driver's launch). initial-exec TLS: the library is preloaded, and
// libvgpu links nothing from ld.so (no __tls_get_addr).
struct ArmedLaunch {
  Device* device;  // null: the launch is not measured
  int64_t at_ns;
};
__attribute__((tls_model("initial-exec"))) thread_local constinit ArmedLaunch t_armed{};

// The stream this thread launched on last, so that a launch-bound loop's next launch finds its
// track without the device's lock: while it keeps launching every < 100 µs onto the same stream,
// its interval continues (no start mark), and an end mark is due at most every 1 ms. While the
// measuring thread lets launches coast (limiter.h Coast), the next `coast_left` launches onto it
// pass unchecked and are counted here until the next checked one.
struct ThreadStream {
  Device* device;
  StreamTrack* track;
  uint32_t generation;
  uintptr_t key;
  int64_t last_ns;
  int64_t mark_due_ns;
  int32_t coast_left;
  uint32_t coast_epoch;
  uint32_t uncounted;  // launches that coasted since the last checked one
};
__attribute__((tls_model("initial-exec"))) thread_local constinit ThreadStream t_stream{};
// A thread that coasted counts what it left uncounted when it exits (a pthread key's destructor:
// a helper thread, as PyTorch's autograd thread, launches without ever synchronising).
constinit pthread_key_t g_coasting_thread_key{};
constinit bool g_coasting_thread_key_ok = false;
__attribute__((tls_model("initial-exec"))) thread_local constinit bool t_exit_counts = false;

// The sync call this thread is in: its device and when it began (turns.h: GPU-bound tenants).
struct InSync {
  Device* device;
  int64_t since_ns;
};
__attribute__((tls_model("initial-exec"))) thread_local constinit InSync t_sync{};

bool Enforcing(const Device& d) {
  if (d.policy == kPolicyForce) return true;
  return __atomic_load_n(d.sharing, __ATOMIC_RELAXED) != VGPU_SM_SHARING_ALONE;
}

void HexUuid(const CUuuid& uuid, char* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < 16; ++i) {
    const auto byte = static_cast<unsigned char>(uuid.bytes[i]);
    out[2 * i] = kHex[byte >> 4];
    out[2 * i + 1] = kHex[byte & 15];
  }
  out[32] = '\0';
}

// Under d.mu, at the device's first launch.
void InitDevice(Device& d, int ordinal) {
  d.ordinal = ordinal;
  d.percent = ordinal < g_config.device_count ? g_config.percent[ordinal] : 0;
  d.policy = g_config.policy;
  d.priority = g_config.priority;
  if (d.percent <= 0 || d.percent >= 100) {
    __atomic_store_n(&d.state, kStateUnlimited, __ATOMIC_RELEASE);
    return;
  }
  const int32_t index = ordinal < g_config.device_count ? g_config.region_device[ordinal] : -1;
  d.region_index = g_config.region != nullptr ? index : -1;
  if (d.region_index >= 0) {
    BindRecord(d, g_config.region->devices[d.region_index]);
  } else {
    d.sharing = &d.private_budget.sharing;
    d.tat = &d.private_budget.tat_ns;
    d.busy_total = &d.private_budget.busy_ns;
    d.charged_total = &d.private_budget.charged_ns;
    d.throttled_total = &d.private_budget.throttled_ns;
  }
  // A fresh budget starts paid up to now, not with a burst of saved-up credit.
  int64_t fresh = 0;
  __atomic_compare_exchange_n(d.tat, &fresh, NowNs(), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  const Rhythm rhythm = RhythmFor(RhythmInput{d.percent, 0, false, false, false});
  __atomic_store_n(&d.resume_credit_ns, rhythm.resume_credit_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&d.burst_ns, rhythm.burst_ns, __ATOMIC_RELAXED);
  CUuuid uuid{};
  d.uuid_hex[0] = '\0';
  if (g_driver.device_get_uuid != nullptr &&
      g_driver.device_get_uuid(&uuid, ordinal) == CUDA_SUCCESS)
    HexUuid(uuid, d.uuid_hex);
  d.marks.Init(&g_driver);
  d.meter.scales.per_event = 1.0;
  // Room for the kernel records waiting to be settled (only limited devices need it).
  void* pending = d.meter.pending != nullptr
                      ? MAP_FAILED
                      : mmap(nullptr, kPendingRecords * (sizeof(TimeSpan) + sizeof(int64_t)),
                             PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pending != MAP_FAILED) {
    d.meter.pending = static_cast<TimeSpan*>(pending);
    d.meter.arrived = reinterpret_cast<int64_t*>(d.meter.pending + kPendingRecords);
  }
  __atomic_store_n(&d.state, kStateLimited, __ATOMIC_RELEASE);
  SamplerStart();
}

// The launch's device when it is limited and the limit holds now; nullptr otherwise.
Device* LimitedDevice() {
  CUdevice ordinal = 0;
  // With one visible device (a pod's usual case) every context is on ordinal 0: cuCtxGetDevice
  // would cost each launch ~40 ns on the lent H200 hosts, 1.1 % of an empty kernel's launch and a
  // third of the limited path's own cost (docs/gpu-results.md; the run: d8b3fc2's
  // bench/gpu/runs/2026-11-28/call28l.sh, in git).
  if (!g_one_device &&
      (g_driver.ctx_get_device(&ordinal) != CUDA_SUCCESS || ordinal < 0 || ordinal >= kMaxDevices))
    return nullptr;
  Device& d = g_devices[ordinal];
  int32_t state = __atomic_load_n(&d.state, __ATOMIC_ACQUIRE);
  if (state == kStateUnknown) {
    pthread_mutex_lock(&d.mu);
    if (d.state == kStateUnknown) InitDevice(d, ordinal);
    pthread_mutex_unlock(&d.mu);
    state = __atomic_load_n(&d.state, __ATOMIC_ACQUIRE);
  }
  // Lifted by the node monitor (policy default, the container alone on the GPU): a launch costs
  // this flag read. Nothing is measured or charged meanwhile, so no debt builds up.
  if (state != kStateLimited || !Enforcing(d)) return nullptr;
  return &d;
}

bool Capturing(CUstream stream, int per_thread) {
  if (!CapturesActive() || g_driver.stream_is_capturing == nullptr) return false;
  if (stream == nullptr && per_thread != 0) stream = CU_STREAM_PER_THREAD;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (g_driver.stream_is_capturing(stream, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

void AtomicMax(uint64_t* target, uint64_t value) {
  uint64_t old = __atomic_load_n(target, __ATOMIC_RELAXED);
  while (value > old && !__atomic_compare_exchange_n(target, &old, value, true, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED)) {
  }
}

// The budget is in debt, or it is not this tenant's turn (turns.h): wait (short sleeps, no lock)
// until enough budget has built up again and the turn has come, or until the limit is lifted. What
// this process still has queued runs meanwhile and is charged by the sampler, which moves the
// deadline: it is re-read after every sleep.
int64_t Throttle(Device& d, int64_t now, bool in_debt) {
  constexpr int64_t kStepNs = 2'000'000;
  // Our open batches must be closed: the sampler measures them while we wait.
  pthread_mutex_lock(&d.mu);
  d.marks.CloseOpen(now, CapturesActive());
  pthread_mutex_unlock(&d.mu);
  const int64_t start = now;
  const bool for_turn_only = !in_debt;
  bool paused = false;  // waited in the alone rhythm's pause (budget.h) at some step
  __atomic_store_n(&d.waiting_since_ns, start, __ATOMIC_RELAXED);
  const int64_t end = WaitUntil(
      [&d, &in_debt, &paused](int64_t t) {
        const int64_t tat = __atomic_load_n(d.tat, __ATOMIC_RELAXED);
        // Once in debt, wait for the rhythm's credit (budget.h), not merely for the debt's end.
        in_debt = in_debt || tat > t;
        int64_t at = t;
        if (in_debt) {
          const Rhythm rhythm{__atomic_load_n(&d.resume_credit_ns, __ATOMIC_RELAXED),
                              __atomic_load_n(&d.burst_ns, __ATOMIC_RELAXED)};
          paused = paused || IsPause(rhythm);
          const int64_t resume = ResumeAtNs(tat, rhythm);
          at = resume > t ? resume : t;
        }
        return TurnStartAtNs(at, UnpackTurn(__atomic_load_n(&d.turn_window, __ATOMIC_RELAXED)));
      },
      [&d] { return !Enforcing(d); }, kStepNs);
  __atomic_store_n(&d.waiting_since_ns, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&d.last_wait_ns, end, __ATOMIC_RELAXED);
  const auto waited = static_cast<uint64_t>(end - start);
  if (for_turn_only && !in_debt) {
    __atomic_fetch_add(&d.turn_waits, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&d.turn_wait_ns, waited, __ATOMIC_RELAXED);
  } else {
    __atomic_fetch_add(&d.budget_waits, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&d.throttled_ns, waited, __ATOMIC_RELAXED);
    if (paused) __atomic_fetch_add(&d.pauses, 1, __ATOMIC_RELAXED);
  }
  __atomic_fetch_add(d.throttled_total, waited, __ATOMIC_RELAXED);
  AtomicMax(&d.max_wait_ns, waited);
  return end;
}

// Adds the launches that coasted since this thread's last checked launch to their device.
void CountCoasted(ThreadStream& ts) {
  if (ts.uncounted == 0) return;
  if (ts.device != nullptr) {
    __atomic_fetch_add(&ts.device->launches, ts.uncounted, __ATOMIC_RELAXED);
    __atomic_fetch_add(&ts.device->coasted, ts.uncounted, __ATOMIC_RELAXED);
  }
  ts.uncounted = 0;
}

void CountAtThreadExit(void* stream) {
  CountCoasted(*static_cast<ThreadStream*>(stream));
}

void BeforeLaunch(CUstream stream, int per_thread) {
  t_armed.device = nullptr;
  Device* dp = LimitedDevice();
  if (dp == nullptr || Capturing(stream, per_thread)) return;  // a capture runs when replayed
  const uintptr_t key = StreamKey(stream, per_thread);
  ThreadStream& ts = t_stream;
  // Coasting (far below the limit, limiter.h Coast): a launch in the middle of a burst onto the
  // same stream costs a few loads, not the clock, the budget and the bookkeeping below (~150 ns
  // of a PyTorch launch on the lent H200 hosts; docs/sm-limit.md). It still marks its stream's
  // batch open, so that the next sync or the measuring thread closes it with an end mark. Whatever
  // it skips errs towards charging more: a pause inside the burst shorter than a pass is not
  // excluded, debt is seen at most kCoastEvery - 1 launches late.
  if (ts.coast_left > 0 && ts.device == dp && ts.key == key &&
      ts.coast_epoch == __atomic_load_n(&g_coast.epoch, __ATOMIC_RELAXED) &&
      __atomic_load_n(&ts.track->generation, __ATOMIC_ACQUIRE) == ts.generation) {
    --ts.coast_left;
    ++ts.uncounted;
    __atomic_store_n(&ts.track->unclosed, 1, __ATOMIC_RELAXED);
    return;
  }
  const uint32_t coasted = ts.uncounted;
  CountCoasted(ts);
  Device& d = *dp;
  int64_t now = NowNs();
  if (__atomic_load_n(&g_sampler_idle, __ATOMIC_RELAXED) != 0) SamplerWake();
  if (__atomic_load_n(d.tat, __ATOMIC_RELAXED) > now) {
    now = Throttle(d, now, true);
  } else if (const int64_t turn = __atomic_load_n(&d.turn_window, __ATOMIC_RELAXED);
             turn != 0 && TurnStartAtNs(now, UnpackTurn(turn)) > now) {
    now = Throttle(d, now, false);
  }
  __atomic_store_n(&d.last_launch_ns, now, __ATOMIC_RELAXED);
  // The stream's interval continues while this thread keeps launching onto it (every < 100 µs on
  // average since its last checked launch); otherwise (a new stream, a pause) the track decides
  // whether a start mark opens a new interval.
  const bool continuing =
      ts.device == &d && ts.key == key && ts.track != nullptr &&
      __atomic_load_n(&ts.track->generation, __ATOMIC_ACQUIRE) == ts.generation &&
      now - ts.last_ns < kContinuousNs * (1 + static_cast<int64_t>(coasted));
  if (!continuing) {
    CUcontext context = nullptr;
    if (g_driver.ctx_get_current != nullptr) {
      g_driver.ctx_get_current(&context);
      // Without a current context the launch fails; with one device LimitedDevice did not ask.
      if (context == nullptr && g_one_device) return;
    }
    pthread_mutex_lock(&d.mu);
    StreamTrack* t = d.marks.Find(stream, per_thread, context);
    if (t != nullptr) d.marks.BeforeLaunch(*t, now);
    ts = ThreadStream{&d,  t,   t != nullptr ? t->generation : 0,
                      key, now, t != nullptr ? t->newest_mark_ns + kMarkIntervalNs : 0,
                      0,   0,   0};
    pthread_mutex_unlock(&d.mu);
  }
  if (ts.track != nullptr) {
    const int32_t every = __atomic_load_n(&g_coast.every, __ATOMIC_RELAXED);
    ts.coast_left = every > 1 ? every - 1 : 0;
    ts.coast_epoch = __atomic_load_n(&g_coast.epoch, __ATOMIC_RELAXED);
    if (every > 1 && !t_exit_counts && g_coasting_thread_key_ok) {
      t_exit_counts = true;
      (void)pthread_setspecific(g_coasting_thread_key, &ts);
    }
  }
  t_armed = ArmedLaunch{&d, now};
}

void AfterLaunch(CUresult result) {
  const ArmedLaunch armed = t_armed;
  t_armed.device = nullptr;
  if (armed.device == nullptr || result != CUDA_SUCCESS) return;
  Device& d = *armed.device;
  __atomic_fetch_add(&d.launches, 1, __ATOMIC_RELAXED);
  ThreadStream& ts = t_stream;
  if (ts.device != &d || ts.track == nullptr) return;
  ts.last_ns = armed.at_ns;
  __atomic_store_n(&ts.track->last_launch_ns, armed.at_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&ts.track->unclosed, 1, __ATOMIC_RELAXED);
  if (armed.at_ns < ts.mark_due_ns) return;
  pthread_mutex_lock(&d.mu);
  if (ts.track->generation == ts.generation) d.marks.RecordEnd(*ts.track, armed.at_ns);
  pthread_mutex_unlock(&d.mu);
  ts.mark_due_ns = armed.at_ns + (LaunchesCoast() ? kCoastingMarkIntervalNs : kMarkIntervalNs);
}

// The app waits for the GPU: close its open batches so that work between two synchronisations is
// measured (and seen complete) even when it is shorter than an end mark's interval.
void BeforeSync() {
  t_sync.device = nullptr;
  Device* dp = LimitedDevice();
  if (dp == nullptr) return;
  // The first launch after a sync is checked: the app may pause after it.
  ThreadStream& ts = t_stream;
  ts.coast_left = 0;
  CountCoasted(ts);
  if (g_one_device && g_driver.ctx_get_current != nullptr) {  // LimitedDevice did not ask
    CUcontext context = nullptr;
    if (g_driver.ctx_get_current(&context) != CUDA_SUCCESS || context == nullptr) return;
  }
  const int64_t now = NowNs();
  pthread_mutex_lock(&dp->mu);
  dp->marks.CloseOpen(now, CapturesActive());
  pthread_mutex_unlock(&dp->mu);
  t_sync = InSync{dp, now};
}

// The app's wait for the GPU ended: how long it waited tells a GPU-bound tenant (turns.h).
void AfterSync() {
  const InSync sync = t_sync;
  t_sync.device = nullptr;
  if (sync.device == nullptr) return;
  const int64_t waited = NowNs() - sync.since_ns;
  if (waited > 0)
    __atomic_fetch_add(&sync.device->sync_ns, static_cast<uint64_t>(waited), __ATOMIC_RELAXED);
}

void ChildAfterFork() {
  // CUDA state does not survive fork: the child starts over (its own slot, events, thread).
  for (Device& d : g_devices) {
    pthread_mutex_init(&d.mu, nullptr);
    d.marks.ForgetAfterFork();
    d.peers.ForgetAfterFork();
    d.peers_tried = false;
    TimeSpan* pending = d.meter.pending;  // the mapping survives fork: keep it
    int64_t* arrived = d.meter.arrived;
    d.meter = MeterState{};
    d.meter.pending = pending;
    d.meter.arrived = arrived;
    __atomic_store_n(&d.waiting_since_ns, 0, __ATOMIC_RELAXED);  // a wait of the parent's threads
    __atomic_store_n(&d.state, kStateUnknown, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&g_captures_active, 0, __ATOMIC_RELAXED);
  t_armed.device = nullptr;
  t_stream = ThreadStream{};
  t_sync = InSync{};
  kernel_records::ForgetAfterFork();
  SamplerAfterFork();
}

}  // namespace

void BindRecord(Device& d, vgpu_region_device& record) {
  d.sharing = &record.sm_sharing;
  d.tat = &record.sm_tat_ns;
  d.busy_total = &record.sm_busy_ns;
  d.charged_total = &record.sm_charged_ns;
  d.throttled_total = &record.sm_throttled_ns;
}

bool CapturesActive() {
  return __atomic_load_n(&g_captures_active, __ATOMIC_RELAXED) > 0;
}

void CountThreadCoasted() {
  CountCoasted(t_stream);
}

void Warn(const char* message) {
  // The library's one way to print (src/log.h): the line honours LIBCUDA_LOG_LEVEL like every
  // other libvgpu warning, and says which part of the library wrote it.
  vgpu_log(VGPU_LOG_WARN, "sm-limit: %s", message);
}

}  // namespace vgpu::sm

extern "C" {

void vgpu_sm_init(const VgpuSmDriver* driver, const VgpuSmConfig* config) {
  using namespace vgpu::sm;
  if (driver == nullptr || config == nullptr || driver->ctx_get_device == nullptr ||
      driver->event_create == nullptr || driver->event_record == nullptr ||
      driver->event_query == nullptr || driver->event_elapsed_time == nullptr ||
      driver->event_destroy == nullptr)
    return;
  pthread_mutex_lock(&g_init_mu);
  if (!g_initialised) {
    g_initialised = true;
    g_driver = *driver;
    g_config = *config;
    g_one_device = config->device_count == 1;
    bool any = false;
    for (int i = 0; i < config->device_count && i < kMaxDevices; ++i)
      any |= config->percent[i] > 0 && config->percent[i] < 100;
    for (Device& d : g_devices) pthread_mutex_init(&d.mu, nullptr);
    if (any) {
      g_coasting_thread_key_ok = pthread_key_create(&g_coasting_thread_key, CountAtThreadExit) == 0;
      pthread_atfork(nullptr, nullptr, ChildAfterFork);
      __atomic_store_n(&vgpu_sm_any_limited, 1, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&g_init_mu);
}

CUresult vgpu_limiter_before_launch(const struct vgpu_launch* launch) {
  if (__builtin_expect(__atomic_load_n(&vgpu_sm_any_limited, __ATOMIC_RELAXED) != 0, 0))
    vgpu::sm::BeforeLaunch(launch->stream, launch->per_thread_stream);
  return CUDA_SUCCESS;
}

void vgpu_limiter_after_launch(const struct vgpu_launch* launch, CUresult result) {
  (void)launch;  // the launch's device and stream are known from its before-launch hook
  if (__builtin_expect(__atomic_load_n(&vgpu_sm_any_limited, __ATOMIC_RELAXED) != 0, 0))
    vgpu::sm::AfterLaunch(result);
}

void vgpu_limiter_before_sync(void) {
  if (__builtin_expect(__atomic_load_n(&vgpu_sm_any_limited, __ATOMIC_RELAXED) != 0, 0))
    vgpu::sm::BeforeSync();
}

void vgpu_limiter_after_sync(void) {
  if (__builtin_expect(__atomic_load_n(&vgpu_sm_any_limited, __ATOMIC_RELAXED) != 0, 0))
    vgpu::sm::AfterSync();
}

void vgpu_limiter_capture_begun(void) {
  __atomic_fetch_add(&vgpu::sm::g_captures_active, 1, __ATOMIC_RELAXED);
}

void vgpu_limiter_capture_ended(void) {
  int active = __atomic_load_n(&vgpu::sm::g_captures_active, __ATOMIC_RELAXED);
  while (active > 0 &&
         !__atomic_compare_exchange_n(&vgpu::sm::g_captures_active, &active, active - 1, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

int vgpu_sm_get_stats(int device, VgpuSmStats* out) {
  using namespace vgpu::sm;
  if (out == nullptr || device < 0 || device >= kMaxDevices) return -1;
  const Device& d = g_devices[device];
  memset(out, 0, sizeof(*out));
  if (__atomic_load_n(&d.state, __ATOMIC_ACQUIRE) != kStateLimited) return 0;
  out->percent = d.percent;
  out->measure = CurrentMeasure();
  out->launches = __atomic_load_n(&d.launches, __ATOMIC_RELAXED);
  out->coasted = __atomic_load_n(&d.coasted, __ATOMIC_RELAXED);
  out->busy_ns = __atomic_load_n(&d.busy_ns, __ATOMIC_RELAXED);
  out->charged_ns = __atomic_load_n(&d.charged_ns, __ATOMIC_RELAXED);
  out->shared_ns = __atomic_load_n(&d.shared_ns, __ATOMIC_RELAXED);
  out->throttled_ns = __atomic_load_n(&d.throttled_ns, __ATOMIC_RELAXED);
  out->budget_waits = __atomic_load_n(&d.budget_waits, __ATOMIC_RELAXED);
  out->max_wait_ns = __atomic_load_n(&d.max_wait_ns, __ATOMIC_RELAXED);
  out->pauses = __atomic_load_n(&d.pauses, __ATOMIC_RELAXED);
  out->turn_waits = __atomic_load_n(&d.turn_waits, __ATOMIC_RELAXED);
  out->turn_wait_ns = __atomic_load_n(&d.turn_wait_ns, __ATOMIC_RELAXED);
  out->sync_ns = __atomic_load_n(&d.sync_ns, __ATOMIC_RELAXED);
  out->events = d.marks.events_recorded();
  out->records = __atomic_load_n(&d.meter.records, __ATOMIC_RELAXED);
  out->dropped = kernel_records::Dropped();
  const MeasuringCost cost = CurrentMeasuringCost();
  out->measuring_cpu_ns = cost.cpu_ns;
  out->measuring_passes = cost.passes;
  out->cupti_flushes = cost.flushes;
  out->windows = cost.windows;
  out->windows_moved = cost.moved;
  out->windows_rescaled = cost.rescaled;
  const kernel_records::AttachStats attach = kernel_records::AttachStatistics();
  out->cupti_attaches = attach.attaches;
  out->cupti_attached_ns = attach.attached_ns;
  const kernel_records::BufferStats buffers = kernel_records::BufferStatistics();
  out->cupti_buffers = buffers.delivered;
  out->cupti_buffers_lent = buffers.lent;
  out->records_unusable = buffers.unusable;
  out->scale = -1.0;
  out->busy_per_launch_ns = -1.0;
  if (__atomic_load_n(&d.meter.has_ratio, __ATOMIC_RELAXED)) {
    __atomic_load(&d.meter.scales.per_event, &out->scale, __ATOMIC_RELAXED);
    __atomic_load(&d.meter.scales.per_launch_ns, &out->busy_per_launch_ns, __ATOMIC_RELAXED);
  }
  const int32_t n = __atomic_load_n(&d.meter.n_window_ratios, __ATOMIC_ACQUIRE);
  out->n_window_ratios = n;
  for (int32_t i = 0; i < n && i < kReportedWindowRatios; ++i)
    __atomic_load(&d.meter.window_ratios[i], &out->window_ratios[i], __ATOMIC_RELAXED);
  return 0;
}

}  // extern "C"
