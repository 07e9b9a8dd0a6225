#include "gpu_scheduler.h"

#include <algorithm>
#include <cstring>

namespace vgpu::fake {
namespace {

PendingKernel& Entry(ContextSlot& c, uint64_t seq) {
  return c.queue[(seq - 1) % kContextQueue];
}
const PendingKernel& Entry(const ContextSlot& c, uint64_t seq) {
  return c.queue[(seq - 1) % kContextQueue];
}

bool HasWork(const ContextSlot& c, int dev) {
  return c.uid != 0 && c.device == dev && PendingKernels(c) > 0;
}

// The next slot after `after` (round robin over slot order) with kernels queued on `dev`.
int NextWithWork(const SharedLayout& s, int dev, int after) {
  for (int i = 1; i <= kMaxContexts; ++i) {
    const int slot = ((after < 0 ? -1 : after) + i) % kMaxContexts;
    if (HasWork(s.contexts[slot], dev)) return slot;
  }
  return -1;
}

bool OthersWaiting(const SharedLayout& s, int dev, int except) {
  for (int slot = 0; slot < kMaxContexts; ++slot) {
    if (slot != except && HasWork(s.contexts[slot], dev)) return true;
  }
  return false;
}

ProcessSlot* Owner(SharedLayout& s, const ContextSlot& c) {
  if (c.process < 0 || c.process >= kMaxProcesses) return nullptr;
  ProcessSlot& p = s.processes[c.process];
  return p.pid == c.pid && p.start_time == c.start_time ? &p : nullptr;
}

void FreeSlot(SharedLayout& s, int slot) {
  ContextSlot& c = s.contexts[slot];
  GpuSchedule& g = s.devices[c.device].sched;
  if (g.current == slot) g.current = -1;
  // Only the header: the queue's pages stay as they are (never read again before reuse).
  c.uid = 0;
  c.closing = 0;
  c.submitted = 0;
  c.completed = 0;
}

void StartServing(SharedLayout& s, GpuSchedule& g, int slot) {
  const uint64_t uid = s.contexts[slot].uid;
  const bool switching = g.last_uid != 0 && g.last_uid != uid;
  g.current = slot;
  g.last = slot;
  g.last_uid = uid;
  g.switch_end_ns = g.sim_ns + (switching ? s.switch_ns : 0);
  g.slice_start_ns = g.switch_end_ns;
}

// Credits the owner with [from, to) of service and records the period for utilization.
void Serve(SharedLayout& s, DeviceShared& d, int dev, const ContextSlot& c, int64_t from,
           int64_t to) {
  if (to <= from) return;
  if (ProcessSlot* p = Owner(s, c)) p->gpu_ns[dev] += static_cast<uint64_t>(to - from);
  if (d.service_count > 0) {
    ServiceInterval& last = d.service[(d.service_next + kServiceRing - 1) % kServiceRing];
    if (last.pid == c.pid && last.end_ns == from) {
      last.end_ns = to;
      return;
    }
  }
  d.service[d.service_next] = ServiceInterval{c.pid, 0, from, to};
  d.service_next = (d.service_next + 1) % kServiceRing;
  d.service_count = std::min<uint32_t>(d.service_count + 1, kServiceRing);
}

void Complete(SharedLayout& s, DeviceShared& d, int dev, int slot, PendingKernel& k) {
  ContextSlot& c = s.contexts[slot];
  k.end_ns = d.sched.sim_ns;
  ++c.completed;
  uint64_t process_done = 0;
  if (ProcessSlot* p = Owner(s, c)) process_done = ++p->kernels_done[dev];
  const uint64_t seq = ++d.record_seq;
  KernelRecord& r = d.records[(seq - 1) % kRecordRing];
  r = KernelRecord{};
  r.seq = seq;
  r.process_done = process_done;
  r.pid = c.pid;
  r.ordinal = c.ordinal;
  r.context_id = c.context_id;
  r.stream_id = k.stream_id;
  r.correlation_id = k.correlation_id;
  r.start_ns = k.start_ns;
  r.end_ns = k.end_ns;
  r.service_ns = k.service_ns;
  std::memcpy(r.grid, k.grid, sizeof r.grid);
  std::memcpy(r.block, k.block, sizeof r.block);
  if (c.closing != 0 && PendingKernels(c) == 0) FreeSlot(s, slot);
}

}  // namespace

void AdvanceGpu(SharedLayout& s, int dev, int64_t to_ns) {
  DeviceShared& d = s.devices[dev];
  GpuSchedule& g = d.sched;
  const int64_t to = std::max(to_ns, g.sim_ns);
  const int64_t slice = std::max<int64_t>(s.timeslice_ns, 1);
  // Each pass takes one step: a choice at the current instant, or time up to the next decision
  // point (a kernel's completion, the slice's end, the switch's end, `to`). Decisions at `to`
  // itself are taken too, so stopping there and resuming later changes nothing.
  for (;;) {
    if (g.current >= 0 && (s.contexts[g.current].uid == 0 || s.contexts[g.current].device != dev))
      g.current = -1;
    if (g.current < 0) {
      const int next = NextWithWork(s, dev, g.last);
      if (next < 0) {
        g.sim_ns = to;  // idle
        return;
      }
      StartServing(s, g, next);
      continue;
    }
    if (g.sim_ns < g.switch_end_ns) {
      if (g.sim_ns >= to) return;
      g.sim_ns = std::min(to, g.switch_end_ns);
      continue;
    }
    ContextSlot& c = s.contexts[g.current];
    if (PendingKernels(c) == 0) {  // yields at once
      g.current = -1;
      continue;
    }
    int64_t slice_end = g.slice_start_ns + slice;
    if (g.sim_ns >= slice_end) {
      if (OthersWaiting(s, dev, g.current)) {
        g.current = -1;
        continue;
      }
      g.slice_start_ns += (g.sim_ns - g.slice_start_ns) / slice * slice;
      slice_end = g.slice_start_ns + slice;
    }
    PendingKernel& k = Entry(c, c.completed + 1);
    const int64_t remaining = k.duration_ns - k.service_ns;
    if (remaining > 0 && g.sim_ns >= to) return;
    if (k.start_ns < 0) k.start_ns = g.sim_ns;
    const int64_t until = std::min({to, g.sim_ns + remaining, slice_end});
    Serve(s, d, dev, c, g.sim_ns, until);
    k.service_ns += until - g.sim_ns;
    g.sim_ns = until;
    if (k.service_ns >= k.duration_ns) Complete(s, d, dev, g.current, k);
  }
}

int OpenContextSlot(SharedLayout& s, int dev, const ContextOwner& owner) {
  for (int slot = 0; slot < kMaxContexts; ++slot) {
    ContextSlot& c = s.contexts[slot];
    if (c.uid != 0) continue;
    c.uid = ++s.next_context_uid;
    c.start_time = owner.start_time;
    c.pid = owner.pid;
    c.process = owner.process;
    c.device = dev;
    c.ordinal = owner.ordinal;
    c.context_id = owner.context_id;
    c.closing = 0;
    c.submitted = 0;
    c.completed = 0;
    return slot;
  }
  return -1;
}

void CloseContextSlot(SharedLayout& s, int slot) {
  ContextSlot& c = s.contexts[slot];
  if (PendingKernels(c) == 0) {
    FreeSlot(s, slot);
  } else {
    c.closing = 1;
  }
}

void DropContextSlot(SharedLayout& s, int slot) {
  FreeSlot(s, slot);
}

bool SubmitKernel(SharedLayout& s, int slot, const KernelLaunch& k, PendingKernel* evicted) {
  ContextSlot& c = s.contexts[slot];
  if (PendingKernels(c) >= static_cast<uint64_t>(kContextQueue)) return false;
  const uint64_t seq = c.submitted + 1;
  PendingKernel& e = Entry(c, seq);
  if (evicted != nullptr) *evicted = seq > kContextQueue ? e : PendingKernel{};
  e = PendingKernel{};
  e.seq = seq;
  e.duration_ns = std::max<int64_t>(k.duration_ns, 0);
  e.start_ns = -1;
  e.end_ns = -1;
  e.stream_id = k.stream_id;
  e.correlation_id = k.correlation_id;
  std::memcpy(e.grid, k.grid, sizeof e.grid);
  std::memcpy(e.block, k.block, sizeof e.block);
  c.submitted = seq;
  return true;
}

KernelProgress ProgressOf(const SharedLayout& s, int slot, uint64_t seq) {
  KernelProgress p;
  const ContextSlot& c = s.contexts[slot];
  if (seq == 0 || c.completed >= seq) {
    p.done = true;
    if (seq != 0 && Entry(c, seq).seq == seq) p.end_ns = Entry(c, seq).end_ns;
    return p;
  }
  // A lower bound: the queued work up to `seq` with no other context in between.
  const GpuSchedule& g = s.devices[c.device].sched;
  int64_t t = g.current == slot ? std::max(g.sim_ns, g.switch_end_ns) : g.sim_ns;
  if (g.current != slot && g.last_uid != 0 && g.last_uid != c.uid) t += s.switch_ns;
  for (uint64_t q = c.completed + 1; q <= seq && q <= c.submitted; ++q) {
    const PendingKernel& k = Entry(c, q);
    t += k.duration_ns - k.service_ns;
  }
  p.earliest_end_ns = t;
  return p;
}

}  // namespace vgpu::fake
