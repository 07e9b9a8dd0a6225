#pragma once

// Layout of the cross-process state file (see shared_state.h): plain data only, mmap'ed by every
// process that uses the fake libraries, so no pointers and no constructors. Sizes are fixed; the
// file is sparse and only the pages in use are ever touched.

#include <cstdint>

#include "fake_config.h"

namespace vgpu::fake {

inline constexpr int kMaxProcesses = 512;
inline constexpr int kMaxContexts = 64;     // scheduling contexts, all processes and GPUs
inline constexpr int kContextQueue = 4096;  // pending kernels per context (its pushbuffer)
inline constexpr int kServiceRing = 16384;  // per GPU: service periods, for utilization
inline constexpr int kRecordRing = 8192;    // per GPU: completed kernels, for their records
inline constexpr int kEventRing = 16;

// A period a process's kernels really ran on a GPU. Back-to-back periods of one process merge,
// so a lone process running for a long time takes one entry.
struct ServiceInterval {
  int32_t pid;
  int32_t unused;
  int64_t start_ns;
  int64_t end_ns;
};

// A kernel in a context's queue. Its entry outlives its completion until the queue wraps, so that
// an event waiting for it can still read its end.
struct PendingKernel {
  uint64_t seq;  // 1, 2, ... within the context
  int64_t duration_ns;
  int64_t service_ns;  // run so far
  int64_t start_ns;    // when it first ran; -1 until then
  int64_t end_ns;      // when it completed; -1 until then
  uint32_t stream_id;
  uint32_t correlation_id;
  uint32_t grid[3];
  uint32_t block[3];
};

// What a completed kernel leaves for its process (the records export).
struct KernelRecord {
  uint64_t seq;           // 1, 2, ... per GPU
  uint64_t process_done;  // the process's kernels completed on this GPU, this one included
  int32_t pid;
  int32_t ordinal;  // CUDA ordinal of the GPU in that process
  uint32_t context_id;
  uint32_t stream_id;
  uint32_t correlation_id;
  uint32_t unused;
  int64_t start_ns;
  int64_t end_ns;
  int64_t service_ns;
  uint32_t grid[3];
  uint32_t block[3];
};

// A CUDA context as the GPU's scheduler sees it: a FIFO of submitted kernels.
struct ContextSlot {
  uint64_t uid;  // 0 = free; otherwise unique over the life of the state file
  uint64_t start_time;
  int32_t pid;
  int32_t process;  // index of the owner's ProcessSlot
  int32_t device;   // physical GPU
  int32_t ordinal;  // CUDA ordinal in the owner process
  uint32_t context_id;
  uint32_t closing;                    // destroyed by its owner: freed once its queue drains
  uint64_t submitted;                  // seq of the last kernel submitted
  uint64_t completed;                  // kernels completed; pending = submitted - completed
  PendingKernel queue[kContextQueue];  // seq s at (s - 1) % kContextQueue
};

// Where one GPU's simulated timeline stands.
struct GpuSchedule {
  int64_t sim_ns;          // simulated up to here
  int64_t slice_start_ns;  // start of the current slice period of `current`
  int64_t switch_end_ns;   // the GPU is switching to `current` until then (nobody's service)
  int64_t reap_check_ns;   // last check for contexts of dead processes
  uint64_t last_uid;       // context that held the GPU last (switch cost), 0 = none yet
  int32_t current;         // context slot holding the GPU, -1 = none
  int32_t last;            // slot that held it last (round-robin position), -1 = none
};

struct DeviceEvent {
  uint64_t seq;   // 1, 2, ... per device; 0 = empty
  uint64_t type;  // NVML event type bit (nvmlEventTypeXidCriticalError = 0x8)
  uint64_t data;  // e.g. the Xid
};

struct DeviceShared {
  uint64_t used_bytes;
  uint64_t lost;       // non-zero: NVML reports the GPU as lost (fake-only failure injection)
  uint64_t event_seq;  // sequence number of the last event posted
  DeviceEvent events[kEventRing];
  GpuSchedule sched;
  uint32_t service_next;
  uint32_t service_count;
  ServiceInterval service[kServiceRing];
  uint64_t record_seq;  // seq of the last record written
  KernelRecord records[kRecordRing];
};

struct ProcessSlot {
  int32_t pid;            // 0 = free
  uint32_t dead_seen_ms;  // CLOCK_MONOTONIC ms (| 1) first seen dead (VGPU_FAKE_EXIT_DRAIN_MS)
  uint64_t start_time;    // /proc/<pid>/stat field 22, detects PID reuse
  uint64_t used_bytes[kMaxDevices];
  uint64_t gpu_ns[kMaxDevices];        // service time: only the periods its kernels really ran
  uint64_t kernels_done[kMaxDevices];  // kernels completed
};

struct SharedLayout {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
  int64_t timeslice_ns;  // fixed by the process that created the file
  int64_t switch_ns;
  uint64_t next_context_uid;
  DeviceShared devices[kMaxDevices];
  ProcessSlot processes[kMaxProcesses];
  ContextSlot contexts[kMaxContexts];
};

}  // namespace vgpu::fake
