#pragma once

// GPU time measured with CUDA events ("marks") on the streams a limited process launches on: the
// measure when kernel records are off (kernel_records.h), and the scale the sampled mode corrects.
// Per stream a ring of marks: a *start* mark before a launch onto an idle stream after a pause of
// the app (so the pause is never counted), an *end* mark after launches at most every 1 ms of host
// time, before a synchronisation, before a budget wait, and by the sampler for batches left open.
// A completed mark closes an interval whose GPU time cuEventElapsedTime gives. Unlike kernel
// records, an interval includes the GPU's short idle gaps between the kernels of a launch-bound
// loop (under 100 µs), so events overstate a host-bound tenant's busy time.
// Not thread-safe: the owner (the device) holds its lock around every call.

#include <cuda.h>
#include <stdint.h>

#include "attribution.h"
#include "sm_limit.h"

namespace vgpu::sm {

constexpr int kMaxStreams = 32;
constexpr int kMarkRing = 16;
constexpr int kEventPool = 16;
// A launch this soon after the previous one on its stream continues the stream's interval.
constexpr int64_t kContinuousNs = 100'000;
// An end mark at most this often per stream (host time): an event costs ~2 µs to record.
constexpr int64_t kMarkIntervalNs = 1'000'000;
// The same while launches coast (limiter.h Coast: nothing binds, the measuring thread passes every
// 8 ms): a quarter of the events to record and to query, and a rise of usage is seen at most
// 4 ms later. Syncs and budget waits still close every batch at once.
constexpr int64_t kCoastingMarkIntervalNs = 4'000'000;
// The sampler closes a batch that nothing closed for this long (past the launching thread's own
// end mark, while launches coast).
constexpr int64_t kOpenBatchNs = 2'000'000;

struct Mark {
  CUevent event;
  bool start;
};

struct StreamTrack {
  bool used;
  uint32_t generation;  // bumped when the slot is recycled for another stream
  uintptr_t key;
  CUstream stream;
  CUcontext context;
  bool per_thread;   // a thread's per-thread default stream: only that thread can record on it
  uintptr_t thread;  // that thread
  Mark ring[kMarkRing];
  uint32_t head;
  uint32_t count;
  Mark last_done;  // the newest completed mark: where the next interval starts
  bool has_last_done;
  int64_t last_launch_ns;  // atomic: launches store it without the lock
  uint32_t unclosed;  // atomic: 1 = launched onto since the newest mark (no end mark closes it)
  int64_t newest_mark_ns;
  bool idle;  // nothing of ours queued on it (all marks completed at the last poll)
  CUevent pool[kEventPool];
  uint32_t pool_count;
};

// The stream's identity for the limiter (the per-thread default stream is one per thread).
uintptr_t StreamKey(CUstream stream, int per_thread);

class EventMarks {
 public:
  void Init(const VgpuSmDriver* driver) { driver_ = driver; }

  // The track of a launch's stream (creating or recycling one), or nullptr when all 32 are busy.
  StreamTrack* Find(CUstream stream, int per_thread, CUcontext context);
  // Before a launch: a start mark when the stream is idle and the app paused since its last launch.
  void BeforeLaunch(StreamTrack& t, int64_t now);
  // After launches: an end mark closing the batch.
  void RecordEnd(StreamTrack& t, int64_t now);
  // Closes every open batch this thread may record into (a synchronisation, a budget wait).
  void CloseOpen(int64_t now, bool capturing);
  // Sampler: the intervals completed since the last poll (GPU time; their span on the host clock
  // is estimated as ending now), closing batches left open `open_ns` past their newest mark.
  // `*busy_ns` = their total.
  int Poll(int64_t now, int64_t open_ns, bool capturing, TimeSpan* out, int max, int64_t* busy_ns);
  // True when no mark is outstanding on any stream.
  bool Idle() const;
  uint64_t events_recorded() const { return events_recorded_; }
  void ForgetAfterFork();

 private:
  bool Record(StreamTrack& t, bool start, int64_t now);
  void Release(StreamTrack& t, CUevent event);
  void Forget(StreamTrack& t);
  bool MayRecord(const StreamTrack& t, bool capturing) const;

  const VgpuSmDriver* driver_ = nullptr;
  StreamTrack tracks_[kMaxStreams]{};
  uint32_t recent_ = 0;
  CUcontext current_context_ = nullptr;  // the sampler thread's (Poll)
  uint64_t events_recorded_ = 0;
};

}  // namespace vgpu::sm
