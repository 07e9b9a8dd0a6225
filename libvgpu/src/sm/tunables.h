#pragma once

// Every tunable number of the measuring thread (sampler.cpp and the files it is split into), each
// with the measurement it rests on. Where nothing was measured the comment says so and why the
// value was chosen. Design: docs/sm-limit.md; measurements, with dates and GPUs:
// docs/gpu-results.md.
//
// The pure policies keep their own numbers beside the functions their table tests pin:
// calibration.h (window spacing kCalibrateMinNs/kCalibrateMaxNs/kMovedCalibrateNs, kScaleMargin,
// kMoved, the minimum calibration, kEstimatePeriodNs, kResumedAfterNs, kSignatureTauNs),
// record_buffers.h (CUPTI's buffer sizes), budget.h (the rhythm's credit and burst), turns.h
// (kTurnPeriodNs, the GPU-bound thresholds), event_marks.h (the marks' spacing, kOpenBatchNs) and
// limiter.h (kCoastEvery).

#include <stddef.h>
#include <stdint.h>

namespace vgpu::sm {

// ---- The thread's rhythm: how often it passes over the devices --------------------------------

// A pass every 2 ms while some launching thread of the process waited for budget or took a turn
// in the last kPressedHoldNs: a waiting thread re-reads the budget every 2 ms (limiter.cpp
// Throttle), and the queued work that completes meanwhile must be charged by then. The thread's
// CPU comes out of the application's: in a one-core container beside a host-bound loop it took
// ~7 % of the core with 1-ms passes and a flush every 4 ms (H100 host), hence not faster.
constexpr int64_t kTickNs = 2'000'000;
// A pass every 4 ms while no thread waited. Each pass wakes the thread, and a tenant pinned to one
// core pays for every wake-up beside its own threads' time: a PyTorch training loop limited to 50
// that never waited ran ~30 % slower with 2-ms passes and CUPTI handing back ~1 100 buffers a
// second (H200, 2026-11-29; the journal and run in git: d8b3fc2's docs/gpu-results.md,
// bench/gpu/runs/2026-11-29/call29l.sh).
constexpr int64_t kCalmTickNs = 4'000'000;
// How long after a wait for budget (or a turn) the 2-ms rhythm lasts. Not measured; chosen as
// long enough to cover the waits of one throttled stretch (the short rhythm's burst, budget.h, is
// 100 ms too) and short enough that a tenant back under its limit soon costs the 4-ms rhythm.
constexpr int64_t kPressedHoldNs = 100'000'000;
// A pass every 8 ms while CUPTI is detached (every enforced tenant far below its limit) and none
// takes turns: usage that rises towards the limit is noticed 8 ms later, long before the 100 ms of
// budget a tenant keeps are spent, and the thread wakes a quarter as often (each wake-up costs
// ~10-40 µs of CPU on the lent VMs).
constexpr int64_t kDetachedTickNs = 8'000'000;
// The thread sleeps (futex) after this long without a launch of a limited device. Not measured;
// chosen so that a pause of a few hundred ms (a training loop's evaluation, a request gap) keeps
// the passes going, while an idle service costs no wake-ups.
constexpr int64_t kIdleAfterNs = 300'000'000;
// Asleep, the thread still looks every 200 ms, in case a wake-up was missed. Not measured; a
// launch wakes it at once through the futex, so this only bounds a lost wake-up.
constexpr long kIdleRecheckNs = 200'000'000;
// The thread's CPU time (statistics, measuring_cpu_ms) is read every 512 passes: about once a
// second at the 2-ms rhythm. Not measured; a clock_gettime per pass would cost more than it tells.
constexpr uint64_t kCpuSampleEveryPasses = 512;
// The thread's stack. Not measured; it needs a few KB (the scratch is static, below): 256 KiB
// instead of glibc's default 8 MiB of address space in every limited process.
constexpr size_t kThreadStackBytes = size_t{256} * 1024;
// The process's launch rate that sizes CUPTI's buffers (kernel_records.h SetLaunchRate, sizes in
// record_buffers.h) is taken over this long. Not measured; chosen as a few of the buffers' 16-ms
// fill times, so that the size follows the loop, not each pass's noise.
constexpr int64_t kLaunchRateEveryNs = 100'000'000;

// ---- CUPTI: flushes, detaching, silence ---------------------------------------------------------

// cuptiActivityFlushAll costs ~100 µs (H100, bench/gpu/cupti_probe.sh, 2026-11-25): at most one
// per 8 ms, and only when CUPTI has handed back no buffer for kDeliveredLatelyNs (while buffers
// fill faster than that, CUPTI hands them back by itself and a flush only costs).
constexpr int64_t kFlushIntervalNs = 8'000'000;
constexpr int64_t kDeliveredLatelyNs = 2'000'000;
// CUPTI merely attached costs every launch ~0.5 µs (H200 host, bench/gpu/cupti_presence.cu,
// 2026-11-28): it is detached once every enforced tenant's estimated usage stayed below kFarBelow
// of its limit for kDetachHoldNs and no records were needed meanwhile, and attached again (3-6 ms
// of stall for a launching thread) for a calibration window now and then (calibration.h), or at
// once when records are needed. So a tenant whose work changed can exceed its limit until the
// next window, by at most 1 / scale (its kernels' share of the event-measured time at the last
// calibration). The 0.75 and the 3 s were not measured one by one: they keep CUPTI attached
// through the usage's ordinary swings below kNearLimit.
constexpr double kFarBelow = 0.75;
constexpr int64_t kDetachHoldNs = 3'000'000'000;
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

// ---- Records mode: when kernel records are on ---------------------------------------------------

// Estimated usage above this share of the limit: exact records. Below it the limit cannot bind
// before the next pass notices the rise, and records would only cost a launch-heavy loop speed
// (~1 µs per launch: 10-20 % of a PyTorch training loop). At 0.75 a training tenant at gpucores
// 30 that used 23 % of the GPU beside another had records on all the time and the pair did 24.8
// steps/s for 32.0 unlimited; at 0.9, 32.4 for 35.4 (H100, 2026-11-27).
constexpr double kNearLimit = 0.9;
// Records mode outlives its last reason by 1 s. Not measured; chosen so that a tenant hovering at
// the limit does not toggle the kernel kind (each toggle stalls a launching thread) every pass.
constexpr int64_t kRecordsHoldNs = 1'000'000'000;
// A tenant the limit binds (it waited for budget this recently) is measured exactly: its share is
// what the limit is about, and its waits hide what records cost it. Two records holds (2 s); not
// measured beyond that.
constexpr int64_t kBindingHoldNs = 2 * kRecordsHoldNs;
// Records mode measures the sampled mode's scales over periods of 250 ms. Not measured as such;
// chosen to match the sampled charge's period (calibration.h kEstimatePeriodNs): a few launches
// at a period's edges count in the next one, a few ms in 250.
constexpr int64_t kRatioPeriodNs = 250'000'000;
// A calibration's records/events ratio is clamped to [0.02, 1]. Not measured; kernels cannot be
// busy longer than the events around them, and a ratio near 0 would let the sampled mode charge
// next to nothing. (The floor is no guard against a bad calibration: a PyTorch setup's 0.43 ms of
// kernels in 55 ms of events became this 2 % and its loop ran at 43 % of the GPU limited to 30;
// calibration.h's minimum calibration is what prevents that now.)
constexpr double kMinEventScale = 0.02;
constexpr double kMaxEventScale = 1.0;

// ---- Calibration windows of the sampled mode ----------------------------------------------------

// Before the first detach, a window of records every 2 s of launching. Not measured; the windows
// before the first detach all see the same few seconds of work, so they only need to be frequent
// enough to catch the work's scale before CUPTI detaches (kDetachHoldNs). Detached windows are
// spaced by calibration.h (10-60 s).
constexpr int64_t kWindowEveryNs = 2'000'000'000;
// A window counts nothing for its first 50 ms: attaching CUPTI and turning its kernel kind on
// stalled the launching thread 16-25 ms of a PyTorch process on an H200, the GPU idled meanwhile
// inside a batch the events measure, and windows that counted from the start found 0.19-0.37 of
// kernel time per event-measured time where records mode found 0.44 (2026-11-29).
constexpr int64_t kWindowSkipNs = 50'000'000;
// Then it counts events and launches for 150 ms, and records until 60 ms later. Neither length
// was measured against others. 150 ms: a calibration needs 20 launches and 5 ms of events
// (calibration.h), which a slow launcher of long kernels also makes in that time, while a window's
// records (~1 µs a launch, on for skip + count = 200 ms) stay cheap. 60 ms: a kernel's record
// reaches the buffer callback 0.6-1.8 ms after it ends (H100, bench/gpu/cupti_probe.sh,
// 2026-11-25), and buffers come back when full (~16 ms of launches) or at a flush (every 8 ms);
// the rest is room for kernels still queued when the count ends.
constexpr int64_t kWindowNs = 150'000'000;
constexpr int64_t kWindowTailNs = 60'000'000;
// A window between detached stretches waits until the process has launched for 250 ms since the
// thread last woke up: right after a pause the GPU may still run at a low clock (an idle H200
// reads 345 MHz) and the first kernels need not show the work's scale, and in turns every window
// opened at a resumption (2026-11-28, `bd86686`).
constexpr int64_t kSettleBeforeWindowNs = 250'000'000;

// ---- The split with other tenants --------------------------------------------------------------

// Beside other tenants an own record is settled 8 ms after it arrived, so that the others publish
// their records of the same time meanwhile. The 8 was not measured: it is the flush interval, the
// longest a complete record waits in a tenant's CUPTI buffer at a pass. A tenant alone settles at
// once: a throttled tenant sees its debt only once its work
// is charged, and at gpucores 30 the 8 ms were 27 ms of every wait of a saturating request loop
// (its p99 read 69 ms held 8 ms longer, 41 ms charged at once; H200, 2026-11-29).
constexpr int64_t kSettleDelayNs = 8'000'000;
// A tenant tells the others it is active until 250 ms after its last launch, and republishes that
// once it moved by 10 ms. Not measured; 250 ms bridges the passes of a tenant that waits for
// budget or its turn, and republishing only every 10 ms keeps the writes to the GPU's file at
// most ~100 a second.
constexpr int64_t kActiveHoldNs = 250'000'000;
constexpr int64_t kActiveRepublishNs = 10'000'000;
// Alone: nobody else was active for 1 s (docs/sm-limit.md, The split). Not measured; long enough
// that a neighbour's pause between requests or steps does not make a tenant take the alone rhythm
// (budget.h) for a moment.
constexpr int64_t kOthersMemoryNs = 1'000'000'000;
// A GPU-bound tenant's claim to a turn (turns.h) lasts 300 ms unless renewed. Not measured; three
// of the turn periods (100 ms), so that a claim outlives a few missed passes but a tenant that
// stopped is out of the others' windows soon.
constexpr int64_t kTurnHoldNs = 300'000'000;

// ---- Estimates of the tenant's work ------------------------------------------------------------

// The charged share of the GPU (MeterState.usage) is an EWMA over ~300 ms. Not measured; shorter
// than kDetachHoldNs and the records holds, long enough that one pass's burst does not read as a
// rise towards the limit.
constexpr int64_t kUsageTauNs = 300'000'000;
// The busy, free, running and sync sums decay over ~1 s. Not measured; the same second as the
// work's signature (calibration.h kSignatureTauNs).
constexpr int64_t kDecayTauNs = 1'000'000'000;
// A saturating tenant keeps the GPU busy whenever it may launch: its kernels cover >= 99 % of that
// time (a matmul loop that synchronises every 4 products; the queue it leaves when it starts to
// wait drains while it waits, so it reads over 1). A back-to-back request loop leaves the GPU idle
// for its host time between requests (91.5 % busy, 6-ms requests on an H200): it must keep the
// short rhythm, whose waits are a few milliseconds, not the alone rhythm's pauses.
constexpr double kSaturating = 0.95;
// ...judged only once the tenant was free to launch for 50 ms (decayed). Not measured; a few
// passes' worth, so that a tenant's first passes do not decide its rhythm.
constexpr double kSaturatingMinFreeNs = 50e6;

// ---- Scratch
// -------------------------------------------------------------------------------------

// Spans one pass handles at a time (events, records, own and others' spans). Not measured; the
// size of the pending-record room (device.h kPendingRecords), about a second of a launch-bound
// loop's kernels.
constexpr int kScratch = 16384;

}  // namespace vgpu::sm
