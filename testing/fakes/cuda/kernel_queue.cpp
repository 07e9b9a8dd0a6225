#include "kernel_queue.h"

#include <algorithm>

#include "../sim_clock.h"

namespace vgpu::fake {
namespace {

constexpr int64_t kWaitStepNs = 200'000;        // longest sleep between two looks at the GPU
constexpr int64_t kQueueSpaceStepNs = 100'000;  // a full queue frees an entry per kernel

void Resolve(CUevent_st* e, int64_t time_ns) {
  e->resolved = true;
  e->time_ns = time_ns;
  ForgetEvent(e);
}

}  // namespace

uint32_t NextCorrelationId() {
  return D().next_correlation_id++;
}

CUresult EnqueueKernel(CUstream_st* s, const KernelSpec& spec, uint32_t correlation_id) {
  if (s->capture) {
    auto node = std::make_unique<CUgraphNode_st>();
    node->kind = CUgraphNode_st::Kind::kKernel;
    node->kernel = spec;
    s->capture->nodes.push_back(std::move(node));
    return CUDA_SUCCESS;
  }
  CUctx_st* ctx = s->ctx;
  if (ctx->sched.uid == 0) {
    // Every context has its own queue on the GPU, time-sliced against all others.
    auto sched = D().shared->OpenContext(ctx->physical, ctx->ordinal, ctx->id);
    if (!sched) return CUDA_ERROR_OUT_OF_MEMORY;
    ctx->sched = *sched;
  }
  KernelLaunch k;
  k.duration_ns = KernelDurationNs(spec, Gpu(ctx->physical).sms);
  k.stream_id = s->id;
  k.correlation_id = correlation_id;
  std::copy(std::begin(spec.grid), std::end(spec.grid), k.grid);
  std::copy(std::begin(spec.block), std::end(spec.block), k.block);
  const Submission sub = D().shared->Submit(ctx->sched, k);
  if (sub.status == Submission::Status::kNoContext) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  if (sub.status == Submission::Status::kFull) return kQueueFull;
  ctx->submitted = sub.seq;
  s->last_seq = sub.seq;
  // The queue entry of an older kernel was reused: events waiting for it take its end now, the
  // last time it can be read.
  if (sub.evicted.seq != 0 && !ctx->waiting_events.empty()) {
    const auto waiting = ctx->waiting_events;
    for (CUevent_st* e : waiting) {
      if (e->target_seq == sub.evicted.seq) Resolve(e, sub.evicted.end_ns);
    }
  }
  return CUDA_SUCCESS;
}

void WaitForQueueSpace() {
  SleepUntilNs(NowNs() + kQueueSpaceStepNs);
}

WaitTarget StreamTarget(const CUstream_st* s) {
  // The legacy default stream waits for all work of its context.
  return WaitTarget{s->ctx->sched, s->legacy ? s->ctx->submitted : s->last_seq};
}

WaitTarget ContextTarget(const CUctx_st* ctx) {
  return WaitTarget{ctx->sched, ctx->submitted};
}

bool IsDone(const WaitTarget& t) {
  return t.seq == 0 || D().shared->ProgressOf(t.ctx, t.seq).done;
}

void WaitUntilDone(const WaitTarget& t) {
  if (t.seq == 0) return;
  for (;;) {
    const Progress p = D().shared->ProgressOf(t.ctx, t.seq);
    if (p.done) return;
    SleepUntilNs(std::min(p.earliest_end_ns, p.now_ns + kWaitStepNs));
  }
}

void RecordEvent(CUevent_st* e, CUstream_st* s) {
  ForgetEvent(e);
  CUctx_st* ctx = s->ctx;
  e->recorded = true;
  const Progress p = D().shared->ProgressOf(ctx->sched, ctx->submitted);
  if (p.done) {  // nothing pending: the event completes as it is recorded
    e->resolved = true;
    e->time_ns = p.now_ns;
    return;
  }
  e->resolved = false;
  e->target_ctx = ctx->sched;
  e->target_seq = ctx->submitted;
  e->waiting_in = ctx;
  ctx->waiting_events.push_back(e);
}

bool EventComplete(CUevent_st* e) {
  if (!e->recorded || e->resolved) return true;
  const Progress p = D().shared->ProgressOf(e->target_ctx, e->target_seq);
  if (!p.done) return false;
  // The end is unknown only if the context has gone and its slot was reused: now is the best
  // estimate left.
  Resolve(e, p.end_ns >= 0 ? p.end_ns : p.now_ns);
  return true;
}

WaitTarget EventTarget(const CUevent_st* e) {
  if (!e->recorded || e->resolved) return WaitTarget{};
  return WaitTarget{e->target_ctx, e->target_seq};
}

void ForgetEvent(CUevent_st* e) {
  if (e->waiting_in == nullptr) return;
  std::erase(e->waiting_in->waiting_events, e);
  e->waiting_in = nullptr;
}

void ForgetWaitingEvents(CUctx_st* ctx) {
  for (CUevent_st* e : ctx->waiting_events) e->waiting_in = nullptr;
  ctx->waiting_events.clear();
}

}  // namespace vgpu::fake
