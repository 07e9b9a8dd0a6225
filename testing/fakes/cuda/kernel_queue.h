#pragma once

// Kernels, streams and events of this process over the GPU's scheduler (SharedState,
// gpu_scheduler.h). Within a context, kernels run one at a time in submission order, so a stream's
// work is done when the last kernel queued on it is, and the legacy stream's when its context's
// last kernel is. Waiting means sleeping in steps, each advancing the simulated timeline.

#include <cstdint>

#include "driver_state.h"

namespace vgpu::fake {

// EnqueueKernel's answer when the context's queue is full; never returned to a caller: the launch
// waits (WaitForQueueSpace, without D().mu) and tries again, as a driver with a full pushbuffer.
inline constexpr CUresult kQueueFull = CUDA_ERROR_NOT_READY;

uint32_t NextCorrelationId();  // one per launch call (a graph launch: one for all its kernels)

// Expects D().mu held. Queues a kernel on `s` (or adds a node when `s` is capturing).
CUresult EnqueueKernel(CUstream_st* s, const KernelSpec& spec, uint32_t correlation_id);
void WaitForQueueSpace();

// A kernel some caller waits for: kernel `seq` of a context's queue (seq 0: nothing to wait for).
struct WaitTarget {
  ContextRef ctx;
  uint64_t seq = 0;
};
WaitTarget StreamTarget(const CUstream_st* s);  // the last kernel queued on it
WaitTarget ContextTarget(const CUctx_st* ctx);  // the last kernel queued in it
bool IsDone(const WaitTarget& t);               // advances the timeline to now
// Sleeps until the target has completed, in steps of at most 200 us (each advancing the
// timeline), or exactly until its earliest possible end. Call without D().mu.
void WaitUntilDone(const WaitTarget& t);

// Expects D().mu held. The event completes with the last kernel queued in `s`'s context; its
// timestamp is that kernel's end, or now when nothing is pending.
void RecordEvent(CUevent_st* e, CUstream_st* s);
// Expects D().mu held. Whether the event has completed (a never-recorded one has); fixes its
// timestamp when it just has.
bool EventComplete(CUevent_st* e);
WaitTarget EventTarget(const CUevent_st* e);
// Expects D().mu held. Takes the event off its context's waiting list (re-record, destroy).
void ForgetEvent(CUevent_st* e);
// Expects D().mu held. The context goes away: its waiting events stay as they are (its queue
// keeps running until drained) but leave its list.
void ForgetWaitingEvents(CUctx_st* ctx);

}  // namespace vgpu::fake
