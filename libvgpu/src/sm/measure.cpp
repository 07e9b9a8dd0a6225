// How the measuring thread measures GPU time (docs/sm-limit.md, step 3): the process-wide choice
// between kernel records, the sampled mode and CUDA events; one device's pass measured each way;
// and the records CUPTI delivered, settled and split with the other tenants of the GPU.

#include <pthread.h>

#include "kernel_records.h"
#include "sampler_state.h"

namespace vgpu::sm::measuring {
namespace {

// Traces a change of the measure (Trace) and returns it.
Measure TraceMeasure(Measure measure) {
  TraceState& t = g_own.trace;
  if (t.traced_measure != measure && measure != kMeasureRecords)  // records: with the reason
    Trace("measure=%s", MeasureName(measure));
  t.traced_measure = measure;
  return measure;
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
  Scratch& s = g_scratch;
  const int64_t settle_delay = final || !others ? -1 : kSettleDelayNs;
  int n = 0;
  int kept = 0;
  for (int i = 0; i < m.n_pending; ++i) {
    if (m.arrived[i] <= now - settle_delay && n < kScratch) {
      s.mine[n++] = m.pending[i];
    } else {
      m.pending[kept] = m.pending[i];
      m.arrived[kept] = m.arrived[i];
      ++kept;
    }
  }
  m.n_pending = kept;
  Attribution a{0, 0, 0};
  if (n == 0) return a;
  int64_t from = s.mine[0].start;
  int64_t to = s.mine[0].end;
  for (int i = 1; i < n; ++i) {
    from = s.mine[i].start < from ? s.mine[i].start : from;
    to = s.mine[i].end > to ? s.mine[i].end : to;
  }
  from = from > clip_from ? from : clip_from;
  to = to < clip_to ? to : clip_to;
  if (from >= to) return a;
  const int n_others =
      others ? d.peers.Collect(from, to, now - kOthersMemoryNs, s.others, kScratch) : 0;
  return Attribute(s.mine, n, s.others, n_others, from, to, s.edges, 4 * kScratch);
}

// Records mode: own records settled and split; each period of kRatioPeriodNs calibrates the
// sampled mode's scales.
Measured MeasureByRecords(Device& d, int64_t now, bool others, bool final, int64_t event_busy,
                          uint64_t launched) {
  MeterState& m = d.meter;
  const Attribution a = SettleRecords(d, now, others, final);
  NoteRatio(m, a.busy_ns, event_busy, launched);
  if (m.ratio_from_ns == 0) m.ratio_from_ns = now;
  if (now - m.ratio_from_ns >= kRatioPeriodNs) {
    FinishRatio(m, false);
    m.ratio_from_ns = now;
  }
  return Measured{a.ours_ns, a.busy_ns, a.shared_ns};
}

// Sampled mode: records of the sampling window only calibrate the scales; the events and
// launches they scale are what is charged.
Measured MeasureBySamples(Device& d, int64_t now, WindowCounts window, bool final,
                          int64_t event_busy, uint64_t launched) {
  MeterState& m = d.meter;
  const Attribution a = SettleRecords(d, now, false, final, window.records_from, window.records_to);
  NoteRatio(m, window.records ? a.busy_ns : 0, window.events ? event_busy : 0,
            window.events ? launched : 0);
  const int64_t charged = ChargeSampled(m.estimate, now, event_busy, launched, m.scales);
  return Measured{charged, charged, 0};
}

// Events only, beside other tenants: the event spans are published and split with theirs.
Measured MeasureByEventsShared(Device& d, int64_t now, PolledEvents events) {
  Scratch& s = g_scratch;
  d.peers.Publish(s.events, events.n);
  int64_t from = now;
  for (int i = 0; i < events.n; ++i) from = s.events[i].start < from ? s.events[i].start : from;
  const int n_others = d.peers.Collect(from, now + 1, now - kOthersMemoryNs, s.others, kScratch);
  const Attribution a =
      Attribute(s.events, events.n, s.others, n_others, from, now + 1, s.edges, 4 * kScratch);
  // Event spans are estimates on the host clock: split their GPU time in the same proportion.
  const int64_t charged = a.busy_ns > 0 ? static_cast<int64_t>(static_cast<double>(events.busy_ns) *
                                                               static_cast<double>(a.ours_ns) /
                                                               static_cast<double>(a.busy_ns))
                                        : events.busy_ns;
  return Measured{charged, events.busy_ns, a.shared_ns};
}

}  // namespace

Measure ChooseMeasure(int64_t now) {
  if (!CuptiUsable()) return TraceMeasure(kMeasureEvents);
  Needs& needs = g_own.needs;
  bool need = false;
  bool near = false;
  bool moved = false;
  const char* why = "";  // for the trace: the first reason records are needed
  double why_usage = 0;
  int why_limit = 0;
  for (const Device& d : g_devices) {
    if (!Limited(d) || Lifted(d)) continue;
    const MeterState& m = d.meter;
    // A tenant the limit binds (it waited for budget lately) is measured exactly: its share is
    // what the limit is about, and its waits hide what records cost it. Another tenant on the GPU
    // is no reason by itself: the calibration windows measure the split while both run, and a
    // tenant far below its limit loses nothing to a slightly wrong estimate.
    const int64_t waited = __atomic_load_n(&d.last_wait_ns, __ATOMIC_RELAXED);
    const bool binding = waited != 0 && now - waited < kBindingHoldNs;
    const bool uncalibrated = !m.has_ratio;
    const bool close = m.usage >= kNearLimit * d.percent / 100.0;
    if (!need && (binding || uncalibrated || close)) {
      why = binding ? "binding" : uncalibrated ? "uncalibrated" : "near-limit";
      why_usage = m.usage;
      why_limit = d.percent;
    }
    need |= binding || uncalibrated || close;
    if (!near && m.usage >= kFarBelow * d.percent / 100.0 && now - needs.near_ns > kRecordsHoldNs)
      Trace("usage near the limit (CUPTI stays attached): usage=%.3f limit=%d", m.usage, d.percent);
    near |= m.usage >= kFarBelow * d.percent / 100.0;
    moved |= Moved(m);
  }
  if (near) needs.near_ns = now;
  if (need) {
    needs.records_needed_ns = now;
    // Once detached again, calibrate as after a change.
    g_own.windows.calibrate_every_ns = kCalibrateMinNs;
  }
  needs.moved = moved;
  if (need && g_own.trace.traced_measure != kMeasureRecords)
    Trace("measure=records reason=%s usage=%.3f limit=%d", why, why_usage, why_limit);
  if (now - needs.records_needed_ns < kRecordsHoldNs) return TraceMeasure(kMeasureRecords);
  return TraceMeasure(kMeasureSampled);
}

void DistributeRecords(int64_t now, bool publish) {
  KernelRecord* records = g_scratch.records;
  for (;;) {
    const int n = kernel_records::Drain(records, kScratch);
    for (int i = 0; i < n; ++i) {
      const KernelRecord& r = records[i];
      if (r.device < 0 || r.device >= kMaxDevices) continue;
      Device& d = g_devices[r.device];
      if (!Limited(d) || Lifted(d)) continue;
      MeterState& m = d.meter;
      __atomic_fetch_add(&m.records, 1, __ATOMIC_RELAXED);
      if (m.pending == nullptr || m.n_pending == kPendingRecords) continue;  // a drain per ms
      m.arrived[m.n_pending] = now;
      m.pending[m.n_pending++] = TimeSpan{r.start, r.end};
      if (publish && OthersActive(m, now)) d.peers.Publish(&m.pending[m.n_pending - 1], 1);
    }
    if (n < kScratch) return;
  }
}

PolledEvents PollEvents(Device& d, int64_t now) {
  // While a stream capture is in progress (PyTorch captures in global mode) another thread's driver
  // calls could invalidate it: the events wait until it ended.
  PolledEvents events{0, 0};
  if (!CapturesActive()) {
    pthread_mutex_lock(&d.mu);
    // While launches coast, launching threads mark their batches every 4 ms themselves.
    const int64_t open_ns = LaunchesCoast() ? kCoastingMarkIntervalNs + kOpenBatchNs : kOpenBatchNs;
    events.n = d.marks.Poll(now, open_ns, false, g_scratch.events, kScratch, &events.busy_ns);
    pthread_mutex_unlock(&d.mu);
  }
  return events;
}

Measured MeasurePass(Device& d, int64_t now, Measure measure, WindowCounts window, bool final,
                     bool others, PolledEvents events, uint64_t launched) {
  if (measure == kMeasureRecords)
    return MeasureByRecords(d, now, others, final, events.busy_ns, launched);
  if (measure == kMeasureSampled)
    return MeasureBySamples(d, now, window, final, events.busy_ns, launched);
  if (others && events.n > 0) return MeasureByEventsShared(d, now, events);
  return Measured{events.busy_ns, events.busy_ns, 0};
}

}  // namespace vgpu::sm::measuring
