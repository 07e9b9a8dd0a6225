#pragma once

// Whose GPU time was it? Pure functions over kernel-busy intervals of the tenants of one GPU, on
// one clock (CLOCK_MONOTONIC). Table-tested (tests/libvgpu/sm/attribution_test.cpp).
//
// Without MPS a GPU runs one context at a time and time-slices the contexts that have work
// (~2 ms slices; a context with nothing queued yields at once). A kernel's record spans from its
// start to its end, so a kernel that was preempted at the end of its context's slice also spans
// the slices the other contexts ran meanwhile: its record is stretched, and the other contexts'
// kernels of that time lie inside it. At an instant covered by records of several tenants, the
// tenant whose covering record is the SHORTEST is the one that ran: a record is long because it
// was preempted. Records of about equal length (within 1/16) share the instant equally — two
// saturating tenants whose kernels both keep being cut at slice ends.
//
// Measured on an H100 with two processes (bench/gpu/cupti_probe.sh, 2026-11-25), against the work
// each tenant completed: a 2 ms-kernel loop beside a launch-bound loop of 8 µs kernels got
// 45.2 % and 41.1 % of the GPU; "shortest" gave 44.6 / 55.0, an equal split of shared time gave
// 70.4 / 29.2 — the equal split hands the launch-bound tenant's own slices half to the other, and a
// tenant undercharged by that much runs far above its limit. Beside host-bound bursts: truth
// 66.0 / 21.6, shortest 78.5 / 21.5, equal split 89.2 / 10.7. What no rule can give back is the
// GPU's own context-switch cost (10–13 % of the time of a saturated pair): it lands on whoever's
// records cover it, so a shared tenant is charged a little more than the work it got (never less).

#include <stdint.h>

namespace vgpu::sm {

struct TimeSpan {
  int64_t start;
  int64_t end;  // exclusive; end > start
};

constexpr int32_t kSelf = -1;

struct OwnedSpan {
  int64_t start;
  int64_t end;
  int32_t owner;  // kSelf, or another tenant's id (0..kMaxOwners-2)
};

constexpr int kMaxOwners = 65;  // this tenant plus 64 others

// One boundary of a span (scratch for the sweep; callers provide the storage).
struct SpanEdge {
  int64_t time;
  int64_t duration;
  int32_t owner;
  int32_t opens;  // 1 at the start, 0 at the end
};

struct Attribution {
  int64_t busy_ns;    // time in [from, to) covered by our own spans (their union)
  int64_t ours_ns;    // the part of it that was ours
  int64_t shared_ns;  // the part of busy_ns also covered by another tenant's span
};

// Splits [from, to) as described above. `scratch` must hold 2 × (n_mine + n_others) edges; spans
// beyond that are ignored (the caller sizes it). Our own spans may overlap each other (several
// streams): we count that time once.
Attribution Attribute(const TimeSpan* mine, int n_mine, const OwnedSpan* others, int n_others,
                      int64_t from, int64_t to, SpanEdge* scratch, int scratch_capacity);

}  // namespace vgpu::sm
