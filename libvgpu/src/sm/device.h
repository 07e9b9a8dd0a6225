#pragma once

// One limited GPU of this process: what the launch path (limiter.cpp) and the measuring thread
// (sampler.cpp and the files of sampler_state.h) share. Fields are grouped by who writes them; the
// comments say how the other side reads them.

#include <pthread.h>
#include <stdint.h>

#include "attribution.h"
#include "calibration.h"
#include "event_marks.h"
#include "peer_file.h"
#include "sm_limit.h"

namespace vgpu::sm {

enum DeviceState : int32_t { kStateUnknown = 0, kStateUnlimited = 1, kStateLimited = 2 };

// VgpuSmConfig.policy (VGPU_SM_POLICY_*, vgpu/region_layout.h): the limit always holds.
constexpr int32_t kPolicyForce = static_cast<int32_t>(VGPU_SM_POLICY_FORCE);

// How this process measures GPU time now (process-wide; VgpuSmStats.measure).
enum Measure : int32_t {
  kMeasureEvents =
      0,  // CUDA events only (no usable CUPTI): includes the GPU's gaps between kernels
  kMeasureRecords = 1,  // kernel records, split with the other tenants: exact
  kMeasureSampled = 2,  // events and launches scaled as short record windows found (calibration.h)
};
// The measure's name in the statistics line and the trace (VGPU_SM_STATS).
inline const char* MeasureName(int32_t measure) {
  static const char* const kNames[] = {"events", "records", "sampled"};
  return kNames[measure >= kMeasureEvents && measure <= kMeasureSampled ? measure : 0];
}

// Container-wide numbers when the region has no record for the device (no shared region).
struct PrivateBudget {
  int32_t sharing;
  int64_t tat_ns;
  uint64_t busy_ns;
  uint64_t charged_ns;
  uint64_t throttled_ns;
};

constexpr int kPendingRecords = 16384;
constexpr int kReportedWindowRatios = VGPU_SM_REPORTED_WINDOW_RATIOS;

// What only the sampler thread touches.
struct MeterState {
  TimeSpan* pending;  // [kPendingRecords]: own kernel records not settled yet (arrival order)
  int64_t* arrived;   // [kPendingRecords]: when each arrived
  int n_pending;
  int64_t busy_until;  // own busy time is counted up to here (records of several streams overlap)
  int64_t last_tick_ns;
  int64_t others_seen_ns;   // another tenant of the GPU was active then
  int64_t high_seen_ns;     // a high-priority one
  int64_t active_until_ns;  // what we last told the others
  double usage;             // charged share of the GPU (EWMA over ~300 ms)
  double busy_sum;          // kernel-busy time, decayed over ~1 s
  double free_sum;          // time the app was not waiting for budget or a turn, decayed alike
  int64_t waited_seen_ns;   // tick.cpp WaitedNs at the last pass
  double running_sum;       // the passes that ended with no thread waiting, decayed alike
  double sync_sum;          // time the app waited for the GPU (sync calls), decayed alike
  uint64_t sync_seen;       // Device::sync_ns at the last pass
  bool gpu_bound;           // takes turns with the GPU's other GPU-bound tenants (turns.h)
  Scales scales;  // the sampled mode's (calibration.h; its fields atomic: the statistics read them)
  bool has_ratio;
  int64_t ratio_records_ns;  // accumulators of the current calibration period
  int64_t ratio_events_ns;
  uint64_t ratio_launches;
  SampledEstimate estimate;  // the sampled mode's charge of the current period
  int64_t ratio_from_ns;
  WorkSignature work;        // now
  int64_t work_ns;           // how long `work` has averaged (calibration.h NoteWork)
  WorkSignature calibrated;  // at the last calibration
  uint64_t launches_seen;    // Device::launches at the last pass
  uint64_t records;          // kernel records received
  // What the first calibration windows found (records/events), for VGPU_SM_STATS; written by the
  // measuring thread only.
  double window_ratios[kReportedWindowRatios];  // atomic
  int32_t n_window_ratios;                      // atomic
};

struct Device {
  // --- set once by InitDevice (under mu), read freely after `state` is kStateLimited ---
  int32_t state;  // atomic
  int ordinal;
  int32_t percent;
  int32_t policy;
  int32_t priority;
  int32_t region_index;  // the region's device record, -1 = none (PrivateBudget)
  int32_t* sharing;      // the node monitor's flag
  int64_t* tat;          // the container's budget (budget.h)
  uint64_t* busy_total;
  uint64_t* charged_total;
  uint64_t* throttled_total;
  PrivateBudget private_budget;
  char uuid_hex[33];

  // --- the launch path and the sampler ---
  pthread_mutex_t mu;  // guards `marks`
  EventMarks marks;
  int64_t last_launch_ns;    // atomic, written by every launch
  uint64_t launches;         // atomic (a thread adds its coasted launches at its next checked one)
  uint64_t coasted;          // atomic: launches that passed unchecked (limiter.h Coast)
  int64_t resume_credit_ns;  // atomic, written by the sampler (budget.h Rhythm)
  int64_t burst_ns;          // atomic, written by the sampler
  uint64_t budget_waits;     // atomic
  uint64_t throttled_ns;     // atomic
  uint64_t max_wait_ns;      // atomic
  uint64_t pauses;           // atomic: budget waits in the alone rhythm's pause (budget.h)
  int64_t waiting_since_ns;  // atomic: a launching thread waits for budget since then (0: none)
  int64_t last_wait_ns;      // atomic: when a launch last waited for budget
  uint64_t sync_ns;          // atomic: time the app's threads spent in sync calls
  int64_t turn_window;       // atomic, written by the sampler: PackTurn(window), 0 = no turns
  uint64_t turn_waits;       // atomic: launches that waited for their turn only
  uint64_t turn_wait_ns;     // atomic: how long they waited

  // --- the sampler only ---
  PeerFile peers;
  bool peers_tried;
  uint64_t busy_ns;
  uint64_t charged_ns;
  uint64_t shared_ns;
  MeterState meter;
};

}  // namespace vgpu::sm
