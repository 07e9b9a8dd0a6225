// The measuring thread of a limited process: every 2-4 ms while the process is launching (8 ms
// while nothing is near its limit) it collects what its kernels used (kernel records, or CUDA
// events), splits the time other tenants' kernels were busy too (attribution.h), charges the
// container's budget, publishes its own busy time to the other tenants of the GPU (peer_file.h),
// and sets the rhythm the launch path waits in (budget.h). It sleeps on a futex while the process
// launches nothing. Design: docs/sm-limit.md.

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../env_config.h"
#include "budget.h"
#include "clock.h"
#include "kernel_records.h"
#include "limiter.h"
#include "turns.h"

namespace vgpu::sm {

constinit int g_sampler_idle = 0;
constinit Coast g_coast{};

namespace {

// The thread's CPU comes out of the application's (in a one-core container beside a host-bound
// loop it took ~7 % of the core with 1 ms passes and a flush every 4 ms, on an H100 host): a pass
// every 2 ms at most (below), and a flush only when CUPTI has not handed buffers back lately.
constexpr int64_t kTickNs = 2'000'000;
constexpr int64_t kFlushIntervalNs = 8'000'000;  // cuptiActivityFlushAll costs ~100 µs
constexpr int64_t kDeliveredLatelyNs = 2'000'000;
constexpr int64_t kSettleDelayNs = 8'000'000;       // others publish their records meanwhile
constexpr int64_t kActiveHoldNs = 250'000'000;      // a tenant is active this long after a launch
constexpr int64_t kOthersMemoryNs = 1'000'000'000;  // alone: nobody else active for this long
constexpr int64_t kIdleAfterNs = 300'000'000;  // the thread sleeps after this long without launches
constexpr int64_t kRecordsHoldNs = 1'000'000'000;  // records mode outlives its reason this long
constexpr int64_t kWindowEveryNs = 2'000'000'000;  // sampled mode: a window of records every 2 s
// A window counts nothing for its first 50 ms: attaching CUPTI and turning its kernel kind on
// stalled the launching thread 16-25 ms of a PyTorch process on an H200, the GPU idled meanwhile
// inside a batch the events measure, and windows that counted from the start found 0.19-0.37 of
// kernel time per event-measured time where records mode found 0.44 (2026-11-29).
constexpr int64_t kWindowSkipNs = 50'000'000;
constexpr int64_t kWindowNs = 150'000'000;       //   then counts events and launches for 150 ms
constexpr int64_t kWindowTailNs = 60'000'000;    //   and records until 60 ms later
constexpr int64_t kRatioPeriodNs = 250'000'000;  // records mode: the ratio's period
// Estimated usage above this share of the limit: exact records. Below it the limit cannot bind
// before the next pass notices the rise, and records would only cost a launch-heavy loop speed
// (~1 µs per launch: 10-20 % of a PyTorch training loop). At 0.75 a training tenant at gpucores
// 30 that used 23 % of the GPU beside another had records on all the time and the pair did 24.8
// steps/s for 32.0 unlimited; at 0.9, 32.4 for 35.4 (H100, 2026-11-27).
constexpr double kNearLimit = 0.9;
// CUPTI merely attached costs every launch ~0.5 µs (kernel_records.h): it is detached while every
// enforced tenant's estimated usage stayed below kFarBelow of its limit for kDetachHoldNs and no
// records were needed meanwhile, and attached again (3-6 ms of stall for a launching thread) for
// a calibration window now and then (calibration.h: every 10 s of launching at first, up to every
// 60 s while the scale holds; 5 s after the last one when the work changed), or at once when
// records are needed. So a tenant whose work changed can exceed its limit until the next window,
// by at most 1 / scale (its kernels' share of the event-measured time at the last calibration).
constexpr double kFarBelow = 0.75;
constexpr int64_t kDetachHoldNs = 3'000'000'000;
// While CUPTI is detached (every enforced tenant far below its limit) and none takes turns, a pass
// every 8 ms does: usage that rises towards the limit is noticed 8 ms later, long before the
// 100 ms of budget a tenant keeps are spent, and the thread wakes a quarter as often (each wake-up
// costs ~10-40 µs of CPU on the lent VMs).
constexpr int64_t kDetachedTickNs = 8'000'000;
// Otherwise a pass every 2 ms while some launching thread of the process waits for budget or took
// a turn in the last 100 ms (it re-reads the budget every 2 ms, and the queued work that completes
// meanwhile must be charged), every 4 ms while none did. Each pass wakes the thread, and a tenant
// pinned to one core pays for every wake-up beside its own threads' time: a PyTorch training loop
// limited to 50 that never waited ran ~30 % slower with 2-ms passes and CUPTI handing back ~1 100
// buffers a second (H200, 2026-11-29; the journal and run in git: d8b3fc2's docs/gpu-results.md,
// bench/gpu/runs/2026-11-29/call29l.sh).
constexpr int64_t kCalmTickNs = 4'000'000;
constexpr int64_t kPressedHoldNs = 100'000'000;
// The launch rate that sizes CUPTI's buffers (kernel_records.h SetLaunchRate), over this long.
constexpr int64_t kLaunchRateEveryNs = 100'000'000;
constexpr int64_t kSettleBeforeWindowNs = 250'000'000;
// A saturating tenant keeps the GPU busy whenever it may launch: its kernels cover >= 99 % of that
// time (a matmul loop that synchronises every 4 products; the queue it leaves when it starts to
// wait drains while it waits, so it reads over 1). A back-to-back request loop leaves the GPU idle
// for its host time between requests (91.5 % busy, 6-ms requests on an H200): it must keep the
// short rhythm, whose waits are a few milliseconds, not the alone rhythm's pauses.
constexpr double kSaturating = 0.95;
constexpr int64_t kTurnHoldNs =
    300'000'000;  // a GPU-bound tenant's claim to a turn lasts this long
constexpr int kScratch = 16384;
// CUPTI that took the kernel kind and then handed nothing back: on an H200 2 of 20 limited launch
// loops at gpucores 90 got no buffer from their first attachment, and one of them kept records
// mode for its whole 80 s, flushed 2 349 times and was charged nothing (2026-11-30, sm-limit.md).
// Buffers come back when they fill (~16 ms of launches each) or at a flush once their records are
// complete, so while the kind is on, kSilentLaunchingNs of launching and kSilentLaunches launches
// without a buffer mean CUPTI is not delivering (or a queue of seconds of work: it detaches and
// attaches again once, which costs such a tenant ~10 ms). Attached again, a second silence gives
// CUPTI up: CUDA events from then on, with a warning.
constexpr int64_t kSilentLaunchingNs = 2'000'000'000;
constexpr uint64_t kSilentLaunches = 500;

constinit pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;  // start/stop
constinit bool g_started = false;
constinit bool g_stop = false;  // atomic
constinit pthread_t g_thread{};
constinit Measure g_measure = kMeasureEvents;  // atomic
constinit bool g_cupti_ok = false;
constinit bool g_cupti_tried = false;
constinit bool g_warned_taken = false;
constinit int64_t g_records_needed_ns = 0;
constinit int64_t g_near_ns = 0;  // some enforced tenant's usage was near its limit then
constinit bool g_moved = false;   // some tenant's work changed since its last calibration
constinit int64_t g_last_flush_ns = 0;
constinit int64_t g_window_start_ns = 0;  // sampled mode's current or last window
// The process's launching time (passes that found it launching, its pauses left out): windows
// are spaced in it, so that a tenant that launches a quarter of the time is not calibrated four
// times as often per unit of its work (each window costs a launch-heavy process ~25 ms).
constinit int64_t g_launching_ns = 0;
constinit int64_t g_window_launching_ns = 0;  // g_launching_ns when the last window opened
// g_launching_ns when the last window for a change of work opened (-1: none yet)
constinit int64_t g_moved_window_launching_ns = -1;
constinit int64_t g_last_pass_ns = 0;
constinit uint64_t g_launches_at_pass = 0;  // the devices' launches at the last pass (coasting)
constinit int64_t g_rate_since_ns = 0;      // the launch rate's current stretch began then
constinit uint64_t g_rate_launches = 0;     //   with the devices' launches at that time
constinit bool g_window_open = false;
constinit bool g_window_collecting = false;
constinit bool g_window_detached = false;  // that window was opened while CUPTI may stay detached
constinit int64_t g_calibrate_every_ns = kCalibrateMinNs;  // detached windows' spacing
constinit bool g_was_active = false;                       // some device launched at the last pass
constinit int64_t g_awake_since_ns = 0;  // since then, passes found launches without a pause
constinit uint64_t g_passes = 0;         // atomic (statistics)
constinit uint64_t g_flushes = 0;        // atomic
constinit uint64_t g_windows = 0;        // atomic
constinit uint64_t g_windows_moved = 0;  // atomic
constinit uint64_t g_rescaled = 0;       // atomic
constinit uint64_t g_thread_cpu_ns = 0;  // atomic: the thread's CPU, read about once a second
// The watch on CUPTI's deliveries while the kernel kind is on (kSilentLaunchingNs).
struct SilenceWatch {
  int64_t since_launching_ns;  // g_launching_ns when the watch (re)started; -1: kind off
  uint64_t launches;           // the devices' launches then
  uint64_t deliveries;         // buffers CUPTI had handed back then
  int strikes;                 // silences since CUPTI last delivered
};
constinit SilenceWatch g_silence{-1, 0, 0, 0};
// VGPU_SM_STATS=2 (Trace): what the last trace lines said, so that only changes are written.
constinit int64_t g_trace_origin_ns = 0;
constinit int g_traced_measure = -1;
constinit bool g_traced_attached = false;

// Scratch of the thread (one thread: plain statics).
constinit TimeSpan s_events[kScratch]{};
constinit KernelRecord s_records[kScratch]{};
constinit TimeSpan s_mine[kScratch]{};
constinit OwnedSpan s_others[kScratch]{};
constinit SpanEdge s_edges[4 * kScratch]{};

bool Limited(const Device& d) {
  return __atomic_load_n(&d.state, __ATOMIC_ACQUIRE) == kStateLimited;
}

// VGPU_SM_STATS=2: one stderr line at each change of how the process is measured (records mode and
// why, CUPTI attached or detached, windows and what they found, usage near the limit), stamped
// with the milliseconds since the measuring thread's first pass. Changes only: a few lines a
// minute in steady work.
__attribute__((format(printf, 1, 2))) void Trace(const char* format, ...) {
  if (g_config.stats < 2) return;
  const int64_t now = NowNs();
  if (g_trace_origin_ns == 0) g_trace_origin_ns = now;
  char line[512];
  int n = snprintf(line, sizeof(line), "[vgpu sm-trace] pid=%d t_ms=%.1f ",
                   static_cast<int>(getpid()), static_cast<double>(now - g_trace_origin_ns) / 1e6);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(line) - 2) return;
  va_list args;
  va_start(args, format);
  const int m = vsnprintf(line + n, sizeof(line) - 1 - static_cast<size_t>(n), format, args);
  va_end(args);
  if (m > 0)
    n += static_cast<size_t>(m) < sizeof(line) - 1 - static_cast<size_t>(n)
             ? m
             : static_cast<int>(sizeof(line)) - 2 - n;
  line[n++] = '\n';
  const ssize_t ignored = write(2, line, static_cast<size_t>(n));
  (void)ignored;
}

bool Lifted(const Device& d) {
  return d.policy != VGPU_POLICY_FORCE &&
         __atomic_load_n(d.sharing, __ATOMIC_RELAXED) == VGPU_SM_SHARING_ALONE;
}

void OpenPeers(Device& d) {
  if (d.peers_tried) return;
  d.peers_tried = true;
  const char* why = nullptr;
  if (d.uuid_hex[0] == '\0') {
    why = "the GPU's UUID is unknown";
  } else if (d.peers.Open(g_config.lock_dir, d.uuid_hex, d.priority, &why)) {
    return;
  }
  char line[512];
  (void)snprintf(
      line, sizeof(line),
      "device %d: %s (%s): other tenants of this GPU are not seen, so time their kernels "
      "shared with ours is charged to us in full (the limit holds, conservatively)",
      d.ordinal, why, g_config.lock_dir);
  Warn(line);
}

// How long the process's launching threads have waited for budget or a turn on `d` until `now`:
// the waits that ended and the one under way (a second thread waiting at once is not seen until
// its wait ends).
int64_t WaitedNs(const Device& d, int64_t now) {
  const uint64_t ended = __atomic_load_n(&d.throttled_ns, __ATOMIC_RELAXED) +
                         __atomic_load_n(&d.turn_wait_ns, __ATOMIC_RELAXED);
  const int64_t since = __atomic_load_n(&d.waiting_since_ns, __ATOMIC_RELAXED);
  return static_cast<int64_t>(ended) + (since != 0 && since < now ? now - since : 0);
}

// Settles own kernel records: their union within [clip_from, clip_to), split with the other
// tenants' spans of that time. Beside other tenants a record waits kSettleDelayNs after it arrived,
// so that their records of the same time are published by then. A tenant alone has nothing to
// split, and its records are charged as they arrive: a throttled tenant sees its debt only once its
// work is charged, so each millisecond of delay is a millisecond of GPU work it runs on in debt and
// then waits out at once, 100 / L ms of wall time (at gpucores 30 the 8 ms were 27 ms of every wait
// of a saturating request loop).
Attribution SettleRecords(Device& d, int64_t now, bool others, bool final,
                          int64_t clip_from = INT64_MIN, int64_t clip_to = INT64_MAX) {
  MeterState& m = d.meter;
  const int64_t settle_delay = final || !others ? -1 : kSettleDelayNs;
  int n = 0;
  int kept = 0;
  for (int i = 0; i < m.n_pending; ++i) {
    if (m.arrived[i] <= now - settle_delay && n < kScratch) {
      s_mine[n++] = m.pending[i];
    } else {
      m.pending[kept] = m.pending[i];
      m.arrived[kept] = m.arrived[i];
      ++kept;
    }
  }
  m.n_pending = kept;
  Attribution a{0, 0, 0};
  if (n == 0) return a;
  int64_t from = s_mine[0].start;
  int64_t to = s_mine[0].end;
  for (int i = 1; i < n; ++i) {
    from = s_mine[i].start < from ? s_mine[i].start : from;
    to = s_mine[i].end > to ? s_mine[i].end : to;
  }
  from = from > clip_from ? from : clip_from;
  to = to < clip_to ? to : clip_to;
  if (from >= to) return a;
  const int n_others =
      others ? d.peers.Collect(from, to, now - kOthersMemoryNs, s_others, kScratch) : 0;
  return Attribute(s_mine, n, s_others, n_others, from, to, s_edges, 4 * kScratch);
}

bool Moved(const MeterState& m) {
  return m.has_ratio && WorkMoved(m.work, m.calibrated);
}

// Sampled mode's scales: kernel-busy time over event-measured time and over launches in the same
// period.
void NoteRatio(MeterState& m, int64_t records_ns, int64_t events_ns, uint64_t launches) {
  m.ratio_records_ns += records_ns;
  m.ratio_events_ns += events_ns;
  m.ratio_launches += launches;
}

void ResetRatio(MeterState& m) {
  m.ratio_records_ns = 0;
  m.ratio_events_ns = 0;
  m.ratio_launches = 0;
}

// What a calibration period found: too little GPU time to tell (nothing changes), that the scale
// it had still holds (calibration.h ScaleHolds), or that it undercharged.
enum class Calibrated { kNothing, kSame, kChanged };

// Too little of either measure: a window is lost, a period of records mode goes on into the next.
Calibrated FinishRatio(MeterState& m, bool window) {
  if (!EnoughToCalibrate(m.ratio_records_ns, m.ratio_events_ns, m.ratio_launches)) {
    if (window) ResetRatio(m);
    return Calibrated::kNothing;
  }
  const auto records = static_cast<double>(m.ratio_records_ns);
  double r = records / static_cast<double>(m.ratio_events_ns);
  r = r < 0.02 ? 0.02 : (r > 1.0 ? 1.0 : r);
  const double per_launch = records / static_cast<double>(m.ratio_launches);
  const Calibrated found = m.has_ratio && ScaleHolds(m.scales.per_event, r) &&
                                   ScaleHolds(m.scales.per_launch_ns, per_launch)
                               ? Calibrated::kSame
                               : Calibrated::kChanged;
  // Not const: __atomic_store.
  double per_event = NextScale(m.scales.per_event, m.has_ratio, r, window);
  double per_launch_ns = NextScale(m.scales.per_launch_ns, m.has_ratio, per_launch, window);
  __atomic_store(&m.scales.per_event, &per_event, __ATOMIC_RELAXED);
  __atomic_store(&m.scales.per_launch_ns, &per_launch_ns, __ATOMIC_RELAXED);
  // Only this thread writes the count: a plain read of it is its own latest value.
  if (const int32_t n = m.n_window_ratios; window && n < kReportedWindowRatios) {
    __atomic_store(&m.window_ratios[n], &r, __ATOMIC_RELAXED);
    __atomic_store_n(&m.n_window_ratios, n + 1, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&m.has_ratio, true, __ATOMIC_RELAXED);
  m.calibrated = m.work;
  ResetRatio(m);
  return found;
}

// What the sampled mode's calibration window counts now: events and launches while the kernel kind
// is on (the window, after its first kWindowSkipNs), and until they have all arrived (window +
// tail) records of the kernels that ran meanwhile, [records_from, records_to) of GPU time (the
// kind is on from the skip, so kernels queued before the window are recorded too): in steady work
// as many ran then as were launched meanwhile. (Records of the kernels launched meanwhile charged
// a fake tenant 43 µs per 40-µs kernel: the skip's queued ones came in.)
struct WindowCounts {
  bool events;
  bool records;
  int64_t records_from;
  int64_t records_to;
};

void Tick(Device& d, int64_t now, Measure measure, WindowCounts window, bool final) {
  MeterState& m = d.meter;
  const int64_t dt = m.last_tick_ns != 0 ? now - m.last_tick_ns : 0;
  m.last_tick_ns = now;
  OpenPeers(d);
  const PeerScan scan = d.peers.Scan(now);
  if (scan.active > 0) m.others_seen_ns = now;
  if (scan.high_priority_active) m.high_seen_ns = now;
  const bool others = m.others_seen_ns != 0 && now - m.others_seen_ns < kOthersMemoryNs;

  // While a stream capture is in progress (PyTorch captures in global mode) another thread's driver
  // calls could invalidate it: the events wait until it ended.
  int64_t event_busy = 0;
  int n_events = 0;
  if (!CapturesActive()) {
    pthread_mutex_lock(&d.mu);
    // While launches coast, launching threads mark their batches every 4 ms themselves.
    const int64_t open_ns = LaunchesCoast() ? kCoastingMarkIntervalNs + kOpenBatchNs : kOpenBatchNs;
    n_events = d.marks.Poll(now, open_ns, false, s_events, kScratch, &event_busy);
    pthread_mutex_unlock(&d.mu);
  }

  int64_t charged = 0;
  int64_t busy = 0;
  int64_t shared = 0;
  const uint64_t launches = __atomic_load_n(&d.launches, __ATOMIC_RELAXED);
  const uint64_t launched = launches - m.launches_seen;
  if (measure == kMeasureRecords) {
    const Attribution a = SettleRecords(d, now, others, final);
    charged = a.ours_ns;
    busy = a.busy_ns;
    shared = a.shared_ns;
    NoteRatio(m, a.busy_ns, event_busy, launched);
    if (m.ratio_from_ns == 0) m.ratio_from_ns = now;
    if (now - m.ratio_from_ns >= kRatioPeriodNs) {
      FinishRatio(m, false);
      m.ratio_from_ns = now;
    }
  } else {
    if (measure == kMeasureSampled) {
      // Records of the sampling window only calibrate the scales; the events and launches they
      // scale are what is charged.
      const Attribution a =
          SettleRecords(d, now, false, final, window.records_from, window.records_to);
      NoteRatio(m, window.records ? a.busy_ns : 0, window.events ? event_busy : 0,
                window.events ? launched : 0);
      charged = ChargeSampled(m.estimate, now, event_busy, launched, m.scales);
      busy = charged;
    } else if (others && n_events > 0) {
      d.peers.Publish(s_events, n_events);
      int64_t from = now;
      for (int i = 0; i < n_events; ++i) from = s_events[i].start < from ? s_events[i].start : from;
      const int n_others =
          d.peers.Collect(from, now + 1, now - kOthersMemoryNs, s_others, kScratch);
      const Attribution a =
          Attribute(s_events, n_events, s_others, n_others, from, now + 1, s_edges, 4 * kScratch);
      // Event spans are estimates on the host clock: split their GPU time in the same proportion.
      charged = a.busy_ns > 0 ? static_cast<int64_t>(static_cast<double>(event_busy) *
                                                     static_cast<double>(a.ours_ns) /
                                                     static_cast<double>(a.busy_ns))
                              : event_busy;
      busy = event_busy;
      shared = a.shared_ns;
    } else {
      charged = event_busy;
      busy = event_busy;
    }
  }
  if (charged > 0 || busy > 0) Charge(d, charged, busy, now);
  __atomic_fetch_add(&d.shared_ns, static_cast<uint64_t>(shared), __ATOMIC_RELAXED);

  // Estimates the rhythm and the choice of measure rest on. Saturating: kernel-busy over the time
  // the app was free to launch, i.e. the pass's time less what its launching threads waited in it,
  // to the nanosecond: waits of the short rhythm (2-4 ms) mostly fall between two passes, and
  // counted as free time they made a saturating tenant look host-bound (busy ~0.9 of free), which
  // kept it in the short rhythm. (The turns' sync fraction keeps the passes' coarser count,
  // `running_sum`, on which its thresholds were measured.)
  const int64_t waited_total = WaitedNs(d, now);
  int64_t waited = waited_total - m.waited_seen_ns;
  m.waited_seen_ns = waited_total;
  waited = waited < 0 ? 0 : (waited > dt ? dt : waited);  // a wait ending mid-read: one pass off
  if (dt > 0) {
    m.usage =
        Ewma(m.usage, static_cast<double>(charged) / static_cast<double>(dt), dt, 300'000'000);
    // The work's signature, to notice when a calibration went stale (Moved).
    NoteWork(m.work, m.work_ns, WorkSample{dt, event_busy, launched});
    const bool waiting = __atomic_load_n(&d.waiting_since_ns, __ATOMIC_RELAXED) != 0;
    const double decay = 1.0 - static_cast<double>(dt) / static_cast<double>(dt + 1'000'000'000);
    m.busy_sum = m.busy_sum * decay + static_cast<double>(busy);
    m.free_sum = m.free_sum * decay + static_cast<double>(dt - waited);
    m.running_sum = m.running_sum * decay + (waiting ? 0.0 : static_cast<double>(dt));
  }
  m.launches_seen = launches;
  const bool saturating = m.free_sum > 50e6 && m.busy_sum >= kSaturating * m.free_sum;

  // Turns (turns.h): a tenant that mostly waits for the GPU takes turns with the others that do.
  const uint64_t sync_total = __atomic_load_n(&d.sync_ns, __ATOMIC_RELAXED);
  if (dt > 0) {
    const double decay = 1.0 - static_cast<double>(dt) / static_cast<double>(dt + 1'000'000'000);
    m.sync_sum = m.sync_sum * decay + static_cast<double>(sync_total - m.sync_seen);
  }
  m.sync_seen = sync_total;
  m.work.sync_fraction = m.running_sum > 0 ? m.sync_sum / m.running_sum : 0.0;
  m.gpu_bound = GpuBound(m.gpu_bound, m.sync_sum, m.running_sum);
  TurnWindow turn{0, 0};
  if (m.gpu_bound) {
    d.peers.SetTurn(now + kTurnHoldNs, d.percent);
    turn = TurnWindowFor(d.peers.Turns(now), d.percent);
  } else {
    d.peers.SetTurn(0, 0);
  }
  __atomic_store_n(&d.turn_window, PackTurn(turn), __ATOMIC_RELAXED);
  const bool high = m.high_seen_ns != 0 && now - m.high_seen_ns < kOthersMemoryNs;
  const Rhythm rhythm = RhythmFor(RhythmInput{d.percent, g_config.alone_pause_ms, !others,
                                              saturating, d.priority != 0 && high});
  __atomic_store_n(&d.resume_credit_ns, rhythm.resume_credit_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&d.burst_ns, rhythm.burst_ns, __ATOMIC_RELAXED);

  // Tell the others we are here while we launch.
  const int64_t until = __atomic_load_n(&d.last_launch_ns, __ATOMIC_RELAXED) + kActiveHoldNs;
  if (until > now && until - m.active_until_ns >= 10'000'000) {
    d.peers.SetActiveUntil(until);
    m.active_until_ns = until;
  }
}

// Hands the records CUPTI delivered to their devices, and publishes them to the other tenants.
void DistributeRecords(int64_t now, bool publish) {
  for (;;) {
    const int n = kernel_records::Drain(s_records, kScratch);
    for (int i = 0; i < n; ++i) {
      const KernelRecord& r = s_records[i];
      if (r.device < 0 || r.device >= kMaxDevices) continue;
      Device& d = g_devices[r.device];
      if (!Limited(d) || Lifted(d)) continue;
      MeterState& m = d.meter;
      __atomic_fetch_add(&m.records, 1, __ATOMIC_RELAXED);
      if (m.pending == nullptr || m.n_pending == kPendingRecords) continue;  // a drain per ms
      m.arrived[m.n_pending] = now;
      m.pending[m.n_pending++] = TimeSpan{r.start, r.end};
      const bool others = m.others_seen_ns != 0 && now - m.others_seen_ns < kOthersMemoryNs;
      if (publish && others) d.peers.Publish(&m.pending[m.n_pending - 1], 1);
    }
    if (n < kScratch) return;
  }
}

void StopAtExit();

void StartCuptiOnce() {
  if (g_cupti_tried) return;
  g_cupti_tried = true;
  const char* why = nullptr;
  g_cupti_ok = kernel_records::Start(g_config.cupti_library, &why);
  // Exit handlers run in reverse order: stop measuring before whatever CUPTI registered at its
  // start tears it down. (The handler registered at our own start stays for exits before this.)
  if (g_cupti_ok) (void)atexit(StopAtExit);
  if (!g_cupti_ok) {
    char line[512];
    (void)snprintf(
        line, sizeof(line),
        "kernel records unavailable (%s): GPU time is measured with CUDA events, which also "
        "count the GPU's short gaps between a host-bound loop's kernels (the limit holds, a "
        "host-bound tenant gets less than its share)",
        why != nullptr ? why : "?");
    Warn(line);
  }
}

// Traces a change of the measure (Trace) and returns it.
Measure TraceMeasure(Measure measure) {
  if (g_traced_measure != measure && measure != kMeasureRecords)  // records: with the reason
    Trace("measure=%s", MeasureName(measure));
  g_traced_measure = measure;
  return measure;
}

// The process-wide choice of measure (device.h Measure), and CUPTI's switch to match it.
Measure ChooseMeasure(int64_t now) {
  StartCuptiOnce();
  if (g_cupti_ok && kernel_records::TakenByApplication()) {
    g_cupti_ok = false;
    kernel_records::SetEnabled(false);
    if (!g_warned_taken) {
      g_warned_taken = true;
      char line[512];
      (void)snprintf(
          line, sizeof(line),
          "the application called %s (a profiler?): kernel records stop, GPU time is measured "
          "with CUDA events from now on, which also count the GPU's short gaps between a "
          "host-bound loop's kernels (the limit holds, a host-bound tenant gets less than its "
          "share)",
          kernel_records::TakenBy());
      Warn(line);
    }
  }
  if (!g_cupti_ok) return TraceMeasure(kMeasureEvents);
  bool need = false;
  bool near = false;
  bool moved = false;
  const char* why = "";  // for the trace: the first reason records are needed
  double why_usage = 0;
  int why_limit = 0;
  for (const Device& d : g_devices) {
    if (!Limited(d) || Lifted(d)) continue;
    const MeterState& m = d.meter;
    // A tenant the limit binds (it waited for budget in the last 2 s) is measured exactly: its
    // share is what the limit is about, and its waits hide what records cost it. Another tenant
    // on the GPU is no reason by itself: the calibration windows measure the split while both
    // run, and a tenant far below its limit loses nothing to a slightly wrong estimate.
    const int64_t waited = __atomic_load_n(&d.last_wait_ns, __ATOMIC_RELAXED);
    const bool binding = waited != 0 && now - waited < 2 * kRecordsHoldNs;
    const bool uncalibrated = !m.has_ratio;
    const bool close = m.usage >= kNearLimit * d.percent / 100.0;
    if (!need && (binding || uncalibrated || close)) {
      why = binding ? "binding" : uncalibrated ? "uncalibrated" : "near-limit";
      why_usage = m.usage;
      why_limit = d.percent;
    }
    need |= binding || uncalibrated || close;
    if (!near && m.usage >= kFarBelow * d.percent / 100.0 && now - g_near_ns > kRecordsHoldNs)
      Trace("usage near the limit (CUPTI stays attached): usage=%.3f limit=%d", m.usage, d.percent);
    near |= m.usage >= kFarBelow * d.percent / 100.0;
    moved |= Moved(m);
  }
  if (near) g_near_ns = now;
  if (need) {
    g_records_needed_ns = now;
    g_calibrate_every_ns = kCalibrateMinNs;  // once detached again, calibrate as after a change
  }
  g_moved = moved;
  if (need && g_traced_measure != kMeasureRecords)
    Trace("measure=records reason=%s usage=%.3f limit=%d", why, why_usage, why_limit);
  if (now - g_records_needed_ns < kRecordsHoldNs) return TraceMeasure(kMeasureRecords);
  return TraceMeasure(kMeasureSampled);
}

// Whether CUPTI may be detached now: no records needed and every enforced tenant far below its
// limit, for a while.
bool MayDetach(int64_t now) {
  return now - g_records_needed_ns >= kDetachHoldNs && now - g_near_ns >= kDetachHoldNs;
}

// Turns CUPTI's kernel kind on and off for the measure (sampled mode: windows), attaches and
// detaches CUPTI (kernel_records.h), and flushes it.
WindowCounts DriveCupti(Measure measure, int64_t now) {
  WindowCounts counts{false, false, 0, 0};
  if (measure == kMeasureRecords) {
    kernel_records::SetEnabled(true);
    g_window_open = false;
    g_window_collecting = false;
  } else if (measure == kMeasureSampled) {
    const bool detach = MayDetach(now);
    const int64_t every = !detach ? kWindowEveryNs : g_calibrate_every_ns;
    // A window between detached stretches waits until the process has launched for a while since
    // the thread woke up: right after a pause the GPU may still run at a low clock (an idle H200
    // reads 345 MHz) and the first kernels need not show the work's scale, and in turns every
    // window opened at a resumption. Not when the work changed: its scales may be stale, and one
    // window opens at once (then at most one per kMovedCalibrateNs of launching).
    const bool settled = now - g_awake_since_ns >= kSettleBeforeWindowNs;
    const int64_t since_window = g_launching_ns - g_window_launching_ns;
    const bool moved_due =
        g_moved && (g_moved_window_launching_ns < 0 ||
                    g_launching_ns - g_moved_window_launching_ns >= kMovedCalibrateNs);
    const bool due = since_window >= every && (!detach || settled);
    if (!g_window_open && !g_window_collecting && (due || moved_due)) {
      if (!due) {
        __atomic_fetch_add(&g_windows_moved, 1, __ATOMIC_RELAXED);
        g_moved_window_launching_ns = g_launching_ns;
      }
      __atomic_fetch_add(&g_windows, 1, __ATOMIC_RELAXED);
      Trace("window opens (%s): launching_s=%.1f since_last_s=%.1f", due ? "due" : "work moved",
            static_cast<double>(g_launching_ns) / 1e9, static_cast<double>(since_window) / 1e9);
      g_window_launching_ns = g_launching_ns;
      g_window_detached = detach;
      g_window_open = kernel_records::SetEnabled(true);
      g_window_collecting = g_window_open;
      // From when the kind is on (attaching took its time).
      g_window_start_ns = NowNs();
      for (Device& d : g_devices) ResetRatio(d.meter);
    }
    // Records mode ended, or a window: the kind goes off outside windows.
    const int64_t in_window = now - g_window_start_ns;
    if (!g_window_collecting || (g_window_open && in_window >= kWindowSkipNs + kWindowNs)) {
      kernel_records::SetEnabled(false);
      g_window_open = false;
    }
    const bool counting = in_window >= kWindowSkipNs;
    counts = WindowCounts{g_window_open && counting, g_window_collecting && counting,
                          g_window_start_ns + kWindowSkipNs,
                          g_window_start_ns + kWindowSkipNs + kWindowNs};
    if (g_window_collecting && !g_window_open &&
        in_window >= kWindowSkipNs + kWindowNs + kWindowTailNs) {
      g_window_collecting = false;
      bool same = false;
      bool changed = false;
      for (Device& d : g_devices) {
        if (!Limited(d)) continue;
        const Calibrated found = FinishRatio(d.meter, true);
        same |= found == Calibrated::kSame;
        changed |= found == Calibrated::kChanged;
        Trace("window done: device=%d %s scale=%.3f per_launch_us=%.2f usage=%.3f", d.ordinal,
              found == Calibrated::kSame      ? "scale holds"
              : found == Calibrated::kChanged ? "rescaled"
                                              : "too little to tell",
              d.meter.scales.per_event, d.meter.scales.per_launch_ns / 1e3, d.meter.usage);
      }
      // Only windows between detached stretches space out (the 2-s windows before the first
      // detach all see the same few seconds of work), and not while the work changed.
      if (changed) __atomic_fetch_add(&g_rescaled, 1, __ATOMIC_RELAXED);
      if (same || changed)
        g_calibrate_every_ns = NextCalibrationSpacing(
            g_calibrate_every_ns, g_window_detached && same && !changed && !g_moved);
    }
    if (detach && !g_window_collecting && kernel_records::Attached()) kernel_records::Detach();
  } else {
    return counts;
  }
  if ((kernel_records::Enabled() || g_window_collecting) &&
      now - g_last_flush_ns >= kFlushIntervalNs &&
      now - kernel_records::LastDeliveryNs() >= kDeliveredLatelyNs) {
    kernel_records::Flush();
    g_last_flush_ns = now;
    __atomic_fetch_add(&g_flushes, 1, __ATOMIC_RELAXED);
  }
  return counts;
}

// CUPTI took the kernel kind and hands nothing back (kSilentLaunchingNs): it is detached, to be
// attached again by the next pass that needs records, and given up for CUDA events at the second
// silence. `launches`: the devices' launches so far.
void WatchForSilence(uint64_t launches) {
  if (!g_cupti_ok || !kernel_records::Enabled()) {
    g_silence.since_launching_ns = -1;
    return;
  }
  const uint64_t delivered = kernel_records::Deliveries();
  if (g_silence.since_launching_ns < 0 || delivered != g_silence.deliveries) {
    const int strikes = delivered != g_silence.deliveries ? 0 : g_silence.strikes;
    g_silence = SilenceWatch{g_launching_ns, launches, delivered, strikes};
    return;
  }
  const int64_t silent_ns = g_launching_ns - g_silence.since_launching_ns;
  const uint64_t silent_launches = launches - g_silence.launches;
  if (silent_ns < kSilentLaunchingNs || silent_launches < kSilentLaunches) return;
  g_silence.since_launching_ns = -1;
  ++g_silence.strikes;
  Trace("CUPTI handed back no buffer for %llu launches in %.1f s of launching (silence %d)",
        static_cast<unsigned long long>(silent_launches), static_cast<double>(silent_ns) / 1e9,
        g_silence.strikes);
  if (g_silence.strikes == 1 && kernel_records::Detach()) return;
  (void)kernel_records::SetEnabled(false);
  (void)kernel_records::Detach();
  g_cupti_ok = false;
  g_window_open = g_window_collecting = false;
  char line[512];
  (void)snprintf(line, sizeof(line),
                 "CUPTI took the kernel records and handed none back (%llu launches in %.1f s of "
                 "launching, %d time%s): GPU time is measured with CUDA events from now on, which "
                 "also count the GPU's short gaps between a host-bound loop's kernels (the limit "
                 "holds, a host-bound tenant gets less than its share)",
                 static_cast<unsigned long long>(silent_launches),
                 static_cast<double>(silent_ns) / 1e9, g_silence.strikes,
                 g_silence.strikes == 1 ? "" : "s");
  Warn(line);
}

bool DeviceBusy(const Device& d, int64_t now) {
  return now - __atomic_load_n(&d.last_launch_ns, __ATOMIC_RELAXED) < kIdleAfterNs ||
         d.meter.n_pending > 0;
}

void SleepUntilWoken() {
  __atomic_store_n(&g_sampler_idle, 1, __ATOMIC_SEQ_CST);
  // A launch between our last look and here wakes us through the futex (it sees idle = 1).
  timespec timeout{0, 200'000'000};
  syscall(SYS_futex, &g_sampler_idle, FUTEX_WAIT_PRIVATE, 1, &timeout, nullptr, 0);
  __atomic_store_n(&g_sampler_idle, 0, __ATOMIC_SEQ_CST);
}

// Sizes CUPTI's buffers by the process's launch rate over the last kLaunchRateEveryNs (`launches`:
// every device's so far).
void NoteLaunchRate(int64_t now, uint64_t launches) {
  if (g_rate_since_ns == 0) {
    g_rate_since_ns = now;
    g_rate_launches = launches;
  } else if (now - g_rate_since_ns >= kLaunchRateEveryNs) {
    kernel_records::SetLaunchRate(static_cast<double>(launches - g_rate_launches) * 1e9 /
                                  static_cast<double>(now - g_rate_since_ns));
    g_rate_since_ns = now;
    g_rate_launches = launches;
  }
}

// Some launching thread of the process waits for budget now or did less than kPressedHoldNs ago.
bool Pressed(int64_t now) {
  for (const Device& d : g_devices) {
    if (!Limited(d)) continue;
    const int64_t waited = __atomic_load_n(&d.last_wait_ns, __ATOMIC_RELAXED);
    if (__atomic_load_n(&d.waiting_since_ns, __ATOMIC_RELAXED) != 0 ||
        (waited != 0 && now - waited < kPressedHoldNs))
      return true;
  }
  return false;
}

// What a pass tells the thread: whether to pass again soon (something launches or a window is
// collecting), and how soon.
struct PassResult {
  bool busy;
  int64_t next_in_ns;
};

// One pass over the limited devices. The last one (at exit) settles everything still pending, so
// that the statistics are complete.
PassResult Pass(bool final) {
  const int64_t now = NowNs();
  bool any_active = false;
  bool any_enforced = false;  // some device's limit holds now (not lifted by the node monitor)
  for (const Device& d : g_devices) {
    const bool busy = Limited(d) && DeviceBusy(d, now);
    any_active |= busy;
    any_enforced |= busy && !Lifted(d);
  }
  if (any_active && !g_was_active) g_awake_since_ns = now;
  const int64_t since_pass = g_last_pass_ns != 0 ? now - g_last_pass_ns : 0;
  if (any_active && g_was_active && since_pass > 0 && since_pass <= kResumedAfterNs)
    g_launching_ns += since_pass;
  g_last_pass_ns = now;
  g_was_active = any_active;
  const Measure measure = ChooseMeasure(now);
  __atomic_store_n(&g_measure, measure, __ATOMIC_RELAXED);
  // Records cost the application ~1 µs per launch and CUPTI attached ~0.5 µs: none while no limit
  // holds (after a while: the node monitor may enforce it again soon).
  const WindowCounts window =
      any_enforced ? DriveCupti(measure, now) : WindowCounts{false, false, 0, 0};
  if (!any_enforced && g_cupti_ok) {
    if (kernel_records::Enabled()) kernel_records::SetEnabled(false);
    g_window_open = g_window_collecting = false;
    if (MayDetach(now) && kernel_records::Attached()) kernel_records::Detach();
  }
  uint64_t launches = 0;
  for (const Device& d : g_devices) launches += __atomic_load_n(&d.launches, __ATOMIC_RELAXED);
  if (any_enforced) WatchForSilence(launches);
  if (g_config.stats >= 2 && kernel_records::Attached() != g_traced_attached) {
    g_traced_attached = !g_traced_attached;
    Trace("CUPTI %s", g_traced_attached ? "attached" : "detached");
  }
  if (final && g_cupti_ok) kernel_records::Flush();
  DistributeRecords(now, measure == kMeasureRecords);
  bool turns = false;
  for (Device& d : g_devices) {
    if (!Limited(d) || Lifted(d)) continue;
    if (final || DeviceBusy(d, now) || !d.marks.Idle()) {
      Tick(d, now, measure, window, final);
      turns |= d.meter.gpu_bound;
    } else {
      __atomic_store_n(&d.turn_window, 0, __ATOMIC_RELAXED);  // an idle tenant takes no turns
    }
  }
  // Nothing binds: CUPTI detached far below every limit, or no limit enforced now.
  const bool relaxed =
      !any_enforced || (g_cupti_ok && measure == kMeasureSampled && !turns &&
                        !g_window_collecting && MayDetach(now) && !kernel_records::Attached());
  // Launches coast while nothing binds (limiter.h Coast); after a pass without launches (a pause
  // of the app) each thread's next launch is checked, so that a pause is never charged.
  if (launches == g_launches_at_pass)
    __atomic_store_n(&g_coast.epoch, __atomic_load_n(&g_coast.epoch, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
  g_launches_at_pass = launches;
  __atomic_store_n(&g_coast.every, any_enforced && relaxed ? kCoastEvery : 0, __ATOMIC_RELAXED);
  NoteLaunchRate(now, launches);
  const int64_t next = relaxed ? kDetachedTickNs : turns || Pressed(now) ? kTickNs : kCalmTickNs;
  return PassResult{any_active || g_window_collecting, next};
}

void NoteThreadCpu() {
  timespec cpu{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
    const auto ns =
        static_cast<uint64_t>(cpu.tv_sec) * 1'000'000'000U + static_cast<uint64_t>(cpu.tv_nsec);
    __atomic_store_n(&g_thread_cpu_ns, ns, __ATOMIC_RELAXED);
  }
}

void* Run(void*) {
  while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
    const PassResult pass = Pass(false);
    if (__atomic_add_fetch(&g_passes, 1, __ATOMIC_RELAXED) % 512 == 0) NoteThreadCpu();
    if (pass.busy) {
      SleepNs(pass.next_in_ns);
    } else {
      SleepUntilWoken();
    }
  }
  Pass(true);
  NoteThreadCpu();
  return nullptr;
}

void StopAtExit() {
  SamplerStop();
}

}  // namespace

void Charge(Device& d, int64_t gpu_ns, int64_t busy_ns, int64_t now) {
  if (gpu_ns > 0) {
    ChargeShared(d.tat, now, __atomic_load_n(&d.burst_ns, __ATOMIC_RELAXED),
                 CostWallNs(gpu_ns, d.percent));
  }
  const auto charged = static_cast<uint64_t>(gpu_ns > 0 ? gpu_ns : 0);
  const auto busy = static_cast<uint64_t>(busy_ns > 0 ? busy_ns : 0);
  __atomic_fetch_add(d.charged_total, charged, __ATOMIC_RELAXED);
  __atomic_fetch_add(d.busy_total, busy, __ATOMIC_RELAXED);
  __atomic_fetch_add(&d.charged_ns, charged, __ATOMIC_RELAXED);
  __atomic_fetch_add(&d.busy_ns, busy, __ATOMIC_RELAXED);
  // This process's share, for the node monitor (HAMi's per-process usage and last kernel time).
  const int slot = g_config.region_slot != nullptr ? *g_config.region_slot : -1;
  if (g_config.region != nullptr && slot >= 0 && slot < VGPU_REGION_MAX_PROCS &&
      d.region_index >= 0) {
    vgpu_region_proc& proc = g_config.region->procs[slot];
    __atomic_fetch_add(&proc.sm_gpu_time_ns[d.region_index], charged, __ATOMIC_RELAXED);
    if (busy > 0)
      __atomic_store_n(&proc.sm_last_kernel_ns[d.region_index], static_cast<uint64_t>(now),
                       __ATOMIC_RELAXED);
  }
}

MeasuringCost CurrentMeasuringCost() {
  return MeasuringCost{__atomic_load_n(&g_thread_cpu_ns, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_passes, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_flushes, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_windows, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_windows_moved, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_rescaled, __ATOMIC_RELAXED)};
}

Measure CurrentMeasure() {
  return __atomic_load_n(&g_measure, __ATOMIC_RELAXED);
}

void SamplerStart() {
  pthread_mutex_lock(&g_mu);
  if (!g_started) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, size_t{256} * 1024);
    // Signals belong to the application's threads.
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    g_started = pthread_create(&g_thread, &attr, Run, nullptr) == 0;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    pthread_attr_destroy(&attr);
    if (g_started) {
      pthread_setname_np(g_thread, "vgpu-sm");  // top -H, /proc/PID/task/*/comm
      (void)atexit(StopAtExit);
    } else {
      Warn("cannot start the measuring thread: the limit cannot be enforced");
    }
  }
  pthread_mutex_unlock(&g_mu);
}

void SamplerWake() {
  if (__atomic_exchange_n(&g_sampler_idle, 0, __ATOMIC_SEQ_CST) != 0)
    syscall(SYS_futex, &g_sampler_idle, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void SamplerStop() {
  pthread_mutex_lock(&g_mu);
  if (g_started && !__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
    // The exiting thread's; other live threads' (at most kCoastEvery - 1 each) stay out.
    CountThreadCoasted();
    __atomic_store_n(&g_stop, true, __ATOMIC_RELEASE);
    __atomic_store_n(&g_sampler_idle, 1, __ATOMIC_SEQ_CST);
    SamplerWake();
    pthread_join(g_thread, nullptr);
    if (g_config.stats > 0) ReportStats();
  }
  pthread_mutex_unlock(&g_mu);
}

void SamplerAfterFork() {
  // The thread did not survive fork; the child starts its own with its first limited launch.
  pthread_mutex_init(&g_mu, nullptr);
  g_started = false;
  __atomic_store_n(&g_stop, false, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler_idle, 0, __ATOMIC_RELAXED);
  g_cupti_ok = false;
  g_cupti_tried = false;
  g_records_needed_ns = 0;
  g_silence = SilenceWatch{-1, 0, 0, 0};
  g_window_open = false;
  g_window_collecting = false;
  g_coast = Coast{};
  g_launches_at_pass = 0;
  g_rate_since_ns = 0;
  g_rate_launches = 0;
}

}  // namespace vgpu::sm

extern "C" void vgpu_sm_shutdown(void) {
  vgpu::sm::SamplerStop();
}
