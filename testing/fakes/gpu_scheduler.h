#pragma once

// How a simulated GPU runs the kernels of its contexts, as a GPU without MPS does: one context at
// a time, round-robin time slices between contexts with work, kernels of one context one at a time
// in submission order. Pure functions over the shared layout (the caller holds the state lock), so
// the rules can be tested with exact times.
//
// Rules, applied lazily: AdvanceGpu replays them from where the timeline stands up to a given time,
// deterministically from the queued work, so any process may advance it whenever it calls in.
// - The running context keeps the GPU while it has kernels queued, until its slice has expired
//   and another context has kernels queued. Slices are periods of `timeslice_ns` from when the
//   context got the GPU; one running alone starts a new period at each expiry.
// - A context whose queue empties yields at once; the next context with work (round robin in slot
//   order) starts immediately, after `switch_ns` of nobody's service if it is not the context
//   that ran last.
// - A kernel cut by the end of a slice is preempted and resumes at its context's next turn: it
//   keeps its first start, its end is when it finally completes.

#include <cstdint>

#include "shared_layout.h"

namespace vgpu::fake {

struct KernelLaunch {
  int64_t duration_ns = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
};

struct ContextOwner {
  int pid = 0;
  uint64_t start_time = 0;
  int process = -1;  // ProcessSlot index
  int ordinal = 0;
  uint32_t context_id = 0;
};

// Simulates GPU `dev` from where its timeline stands up to `to_ns` (an earlier time: no-op).
void AdvanceGpu(SharedLayout& s, int dev, int64_t to_ns);

// Takes a free context slot on GPU `dev`; -1 when none is free.
int OpenContextSlot(SharedLayout& s, int dev, const ContextOwner& owner);
// The owner destroyed the context: its queued kernels still run, the slot is freed once drained.
void CloseContextSlot(SharedLayout& s, int slot);
// The owner died: its queued kernels are dropped at once and the slot is freed.
void DropContextSlot(SharedLayout& s, int slot);

inline uint64_t PendingKernels(const ContextSlot& c) {
  return c.submitted - c.completed;
}

// Appends a kernel to context `slot`'s queue, which the caller has advanced to the submission
// time. Returns false (queue unchanged) when the queue is full. `evicted` receives the completed
// kernel whose entry the new one reuses (seq 0 when none): the last chance to read its end.
bool SubmitKernel(SharedLayout& s, int slot, const KernelLaunch& k, PendingKernel* evicted);

struct KernelProgress {
  bool done = false;
  int64_t end_ns = -1;          // completion time, when done and still in the queue's history
  int64_t earliest_end_ns = 0;  // when not done: it cannot complete before this
};
// Where kernel `seq` of context `slot` stands (seq 0: nothing to wait for, done).
KernelProgress ProgressOf(const SharedLayout& s, int slot, uint64_t seq);

}  // namespace vgpu::fake
