// The measuring thread of a limited process: every 2-4 ms while the process is launching (8 ms
// while nothing is near its limit) it collects what its kernels used (kernel records, or CUDA
// events), splits the time other tenants' kernels were busy too (attribution.h), charges the
// container's budget, publishes its own busy time to the other tenants of the GPU (peer_file.h),
// and sets the rhythm the launch path waits in (budget.h). It sleeps on a futex while the process
// launches nothing. Design: docs/sm-limit.md.
//
// This file: the thread's life (start, wake, stop, fork) and its passes over the devices. One
// device's pass: tick.cpp; how GPU time is measured: measure.cpp; calibration windows:
// calibration_windows.cpp; CUPTI's attachment: cupti_attach.cpp; the numbers: tunables.h; the
// state and who may touch it: sampler_state.h.

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "clock.h"
#include "kernel_records.h"
#include "limiter.h"
#include "sampler_state.h"

namespace vgpu::sm {

constinit int g_sampler_idle = 0;
constinit Coast g_coast{};

namespace measuring {

constinit Lifecycle g_life{PTHREAD_MUTEX_INITIALIZER, false, false, {}};
constinit Published g_published{kMeasureEvents, 0, 0, 0, 0, 0, 0};
constinit ThreadOwn g_own{
    Pace{0, 0, false, 0, 0, 0, 0},
    CuptiUse{false, false, false, 0, SilenceWatch{-1, 0, 0, 0}},
    Needs{0, 0, false},
    Windows{0, 0, -1, false, false, false, kCalibrateMinNs},
    TraceState{0, -1, false},
};
constinit Scratch g_scratch{};

void Trace(const char* format, ...) {
  if (g_config.stats < 2) return;
  TraceState& t = g_own.trace;
  const int64_t now = NowNs();
  if (t.origin_ns == 0) t.origin_ns = now;
  char line[512];
  int n = snprintf(line, sizeof(line), "[vgpu sm-trace] pid=%d t_ms=%.1f ",
                   static_cast<int>(getpid()), static_cast<double>(now - t.origin_ns) / 1e6);
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

void StopAtExit() {
  SamplerStop();
}

namespace {

bool DeviceBusy(const Device& d, int64_t now) {
  return now - __atomic_load_n(&d.last_launch_ns, __ATOMIC_RELAXED) < kIdleAfterNs ||
         d.meter.n_pending > 0;
}

void SleepUntilWoken() {
  __atomic_store_n(&g_sampler_idle, 1, __ATOMIC_SEQ_CST);
  // A launch between our last look and here wakes us through the futex (it sees idle = 1).
  timespec timeout{0, kIdleRecheckNs};
  syscall(SYS_futex, &g_sampler_idle, FUTEX_WAIT_PRIVATE, 1, &timeout, nullptr, 0);
  __atomic_store_n(&g_sampler_idle, 0, __ATOMIC_SEQ_CST);
}

// Sizes CUPTI's buffers by the process's launch rate over the last kLaunchRateEveryNs (`launches`:
// every device's so far).
void NoteLaunchRate(int64_t now, uint64_t launches) {
  Pace& p = g_own.pace;
  if (p.rate_since_ns == 0) {
    p.rate_since_ns = now;
    p.rate_launches = launches;
  } else if (now - p.rate_since_ns >= kLaunchRateEveryNs) {
    kernel_records::SetLaunchRate(static_cast<double>(launches - p.rate_launches) * 1e9 /
                                  static_cast<double>(now - p.rate_since_ns));
    p.rate_since_ns = now;
    p.rate_launches = launches;
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

// Which devices a pass finds launching, and whether some device's limit holds now (not lifted by
// the node monitor).
struct Activity {
  bool any_active;
  bool any_enforced;
};

Activity LookForActivity(int64_t now) {
  Activity a{false, false};
  for (const Device& d : g_devices) {
    const bool busy = Limited(d) && DeviceBusy(d, now);
    a.any_active |= busy;
    a.any_enforced |= busy && !Lifted(d);
  }
  return a;
}

// Adds the time since the last pass to the process's launching time when both passes found it
// launching (a longer gap is a pause: the thread slept).
void CountLaunchingTime(int64_t now, bool any_active) {
  Pace& p = g_own.pace;
  if (any_active && !p.was_active) p.awake_since_ns = now;
  const int64_t since_pass = p.last_pass_ns != 0 ? now - p.last_pass_ns : 0;
  if (any_active && p.was_active && since_pass > 0 && since_pass <= kResumedAfterNs)
    p.launching_ns += since_pass;
  p.last_pass_ns = now;
  p.was_active = any_active;
}

uint64_t AllLaunches() {
  uint64_t launches = 0;
  for (const Device& d : g_devices) launches += __atomic_load_n(&d.launches, __ATOMIC_RELAXED);
  return launches;
}

// Every enforced, limited device that launched lately (or has marks out, or at the last pass)
// gets its pass; an idle one takes no turns. Whether some device takes turns.
bool TickDevices(int64_t now, Measure measure, WindowCounts window, bool final) {
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
  return turns;
}

// Launches coast while nothing binds (limiter.h Coast); after a pass without launches (a pause
// of the app) each thread's next launch is checked, so that a pause is never charged.
void SetCoasting(bool coast, uint64_t launches) {
  Pace& p = g_own.pace;
  if (launches == p.launches_at_pass)
    __atomic_store_n(&g_coast.epoch, __atomic_load_n(&g_coast.epoch, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
  p.launches_at_pass = launches;
  __atomic_store_n(&g_coast.every, coast ? kCoastEvery : 0, __ATOMIC_RELAXED);
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
  const Activity activity = LookForActivity(now);
  CountLaunchingTime(now, activity.any_active);
  const Measure measure = ChooseMeasure(now);
  __atomic_store_n(&g_published.measure, measure, __ATOMIC_RELAXED);
  // Records cost the application ~1 µs per launch and CUPTI attached ~0.5 µs: none while no limit
  // holds (after a while: the node monitor may enforce it again soon).
  const WindowCounts window =
      activity.any_enforced ? DriveCupti(measure, now) : WindowCounts{false, false, 0, 0};
  if (!activity.any_enforced && g_own.cupti.ok) RelaxCupti(now);
  const uint64_t launches = AllLaunches();
  if (activity.any_enforced) WatchForSilence(launches);
  TraceAttachment();
  if (final && g_own.cupti.ok) kernel_records::Flush();
  DistributeRecords(now, measure == kMeasureRecords);
  const bool turns = TickDevices(now, measure, window, final);
  // Nothing binds: CUPTI detached far below every limit, or no limit enforced now.
  const bool relaxed = !activity.any_enforced ||
                       (g_own.cupti.ok && measure == kMeasureSampled && !turns &&
                        !g_own.windows.collecting && MayDetach(now) && !kernel_records::Attached());
  SetCoasting(activity.any_enforced && relaxed, launches);
  NoteLaunchRate(now, launches);
  const int64_t next = relaxed ? kDetachedTickNs : turns || Pressed(now) ? kTickNs : kCalmTickNs;
  return PassResult{activity.any_active || g_own.windows.collecting, next};
}

void NoteThreadCpu() {
  timespec cpu{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0) {
    const auto ns =
        static_cast<uint64_t>(cpu.tv_sec) * 1'000'000'000U + static_cast<uint64_t>(cpu.tv_nsec);
    __atomic_store_n(&g_published.thread_cpu_ns, ns, __ATOMIC_RELAXED);
  }
}

void* Run(void*) {
  // Named from inside, before its first pass: named by its creator after pthread_create, the
  // thread could already be inside a CUPTI call (NamedForCupti), which saved its inherited name
  // and put that back afterwards, so under load it went by the application's name.
  pthread_setname_np(pthread_self(), "vgpu-sm");  // top -H, /proc/PID/task/*/comm
  while (!__atomic_load_n(&g_life.stop, __ATOMIC_ACQUIRE)) {
    const PassResult pass = Pass(false);
    if (__atomic_add_fetch(&g_published.passes, 1, __ATOMIC_RELAXED) % kCpuSampleEveryPasses == 0)
      NoteThreadCpu();
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

}  // namespace
}  // namespace measuring

using measuring::g_life;
using measuring::g_own;
using measuring::g_published;

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
  return MeasuringCost{__atomic_load_n(&g_published.thread_cpu_ns, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_published.passes, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_published.flushes, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_published.windows, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_published.windows_moved, __ATOMIC_RELAXED),
                       __atomic_load_n(&g_published.rescaled, __ATOMIC_RELAXED)};
}

Measure CurrentMeasure() {
  return __atomic_load_n(&g_published.measure, __ATOMIC_RELAXED);
}

void SamplerStart() {
  pthread_mutex_lock(&g_life.mu);
  if (!g_life.started) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, kThreadStackBytes);
    // Signals belong to the application's threads.
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    g_life.started = pthread_create(&g_life.thread, &attr, measuring::Run, nullptr) == 0;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    pthread_attr_destroy(&attr);
    if (g_life.started) {
      (void)atexit(measuring::StopAtExit);
    } else {
      Warn("cannot start the measuring thread: the limit cannot be enforced");
    }
  }
  pthread_mutex_unlock(&g_life.mu);
}

void SamplerWake() {
  if (__atomic_exchange_n(&g_sampler_idle, 0, __ATOMIC_SEQ_CST) != 0)
    syscall(SYS_futex, &g_sampler_idle, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void SamplerStop() {
  pthread_mutex_lock(&g_life.mu);
  if (g_life.started && !__atomic_load_n(&g_life.stop, __ATOMIC_ACQUIRE)) {
    // The exiting thread's; other live threads' (at most kCoastEvery - 1 each) stay out.
    CountThreadCoasted();
    __atomic_store_n(&g_life.stop, true, __ATOMIC_RELEASE);
    __atomic_store_n(&g_sampler_idle, 1, __ATOMIC_SEQ_CST);
    SamplerWake();
    pthread_join(g_life.thread, nullptr);
    if (g_config.stats > 0) ReportStats();
  }
  pthread_mutex_unlock(&g_life.mu);
}

void SamplerAfterFork() {
  // The thread did not survive fork; the child starts its own with its first limited launch.
  pthread_mutex_init(&g_life.mu, nullptr);
  g_life.started = false;
  __atomic_store_n(&g_life.stop, false, __ATOMIC_RELAXED);
  __atomic_store_n(&g_sampler_idle, 0, __ATOMIC_RELAXED);
  g_own.cupti.ok = false;
  g_own.cupti.tried = false;
  g_own.needs.records_needed_ns = 0;
  g_own.cupti.silence = measuring::SilenceWatch{-1, 0, 0, 0};
  measuring::CloseWindows();
  g_coast = Coast{};
  g_own.pace.launches_at_pass = 0;
  g_own.pace.rate_since_ns = 0;
  g_own.pace.rate_launches = 0;
}

}  // namespace vgpu::sm

extern "C" void vgpu_sm_shutdown(void) {
  vgpu::sm::SamplerStop();
}
