#include "event_marks.h"

#include <pthread.h>
#include <string.h>

namespace vgpu::sm {

uintptr_t StreamKey(CUstream stream, int per_thread) {
  if (stream == CU_STREAM_LEGACY) stream = nullptr;
  const auto thread = static_cast<uintptr_t>(pthread_self());
  if (stream == nullptr && per_thread != 0)
    return reinterpret_cast<uintptr_t>(CU_STREAM_PER_THREAD) ^ (thread << 4);
  if (stream == CU_STREAM_PER_THREAD) return reinterpret_cast<uintptr_t>(stream) ^ (thread << 4);
  return reinterpret_cast<uintptr_t>(stream);
}

void EventMarks::Release(StreamTrack& t, CUevent event) {
  if (event == nullptr) return;
  if (t.pool_count < kEventPool) {
    t.pool[t.pool_count++] = event;
  } else {
    driver_->event_destroy(event);
  }
}

void EventMarks::Forget(StreamTrack& t) {
  for (uint32_t i = 0; i < t.count; ++i)
    driver_->event_destroy(t.ring[(t.head + i) % kMarkRing].event);
  if (t.has_last_done) driver_->event_destroy(t.last_done.event);
  for (uint32_t i = 0; i < t.pool_count; ++i) driver_->event_destroy(t.pool[i]);
  const uint32_t generation = t.generation + 1;
  memset(static_cast<void*>(&t), 0, sizeof(t));
  // Launching threads compare it without the lock (limiter.cpp, ThreadStream).
  __atomic_store_n(&t.generation, generation, __ATOMIC_RELEASE);
}

StreamTrack* EventMarks::Find(CUstream stream, int per_thread, CUcontext context) {
  const uintptr_t key = StreamKey(stream, per_thread);
  StreamTrack& recent = tracks_[recent_];
  if (recent.used && recent.key == key) return &recent;
  StreamTrack* free_slot = nullptr;
  StreamTrack* idle_slot = nullptr;
  for (StreamTrack& t : tracks_) {
    if (t.used && t.key == key) {
      recent_ = static_cast<uint32_t>(&t - tracks_);
      return &t;
    }
    if (!t.used && free_slot == nullptr) free_slot = &t;
    if (t.used && t.idle && t.count == 0 && idle_slot == nullptr) idle_slot = &t;
  }
  if (free_slot == nullptr && idle_slot != nullptr) {
    Forget(*idle_slot);  // more streams than slots: recycle one with nothing queued
    free_slot = idle_slot;
  }
  if (free_slot == nullptr) return nullptr;  // 32 busy streams: this one goes unmeasured
  StreamTrack& t = *free_slot;
  t.used = true;
  t.key = key;
  if (stream == CU_STREAM_LEGACY) stream = nullptr;
  t.per_thread = (stream == nullptr && per_thread != 0) || stream == CU_STREAM_PER_THREAD;
  t.stream = t.per_thread ? CU_STREAM_PER_THREAD : stream;
  t.thread = static_cast<uintptr_t>(pthread_self());
  t.context = context;
  t.idle = true;
  recent_ = static_cast<uint32_t>(&t - tracks_);
  return &t;
}

bool EventMarks::Record(StreamTrack& t, bool start, int64_t now) {
  if (t.count >= kMarkRing) return false;  // the GPU lags 16 marks behind: the next one will do
  CUevent event = nullptr;
  if (t.pool_count > 0) {
    event = t.pool[--t.pool_count];
  } else if (driver_->event_create(&event, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    return false;
  }
  if (driver_->event_record(event, t.stream) != CUDA_SUCCESS) {
    Release(t, event);
    return false;
  }
  t.ring[(t.head + t.count) % kMarkRing] = Mark{event, start};
  ++t.count;
  if (!start) __atomic_store_n(&t.unclosed, 0, __ATOMIC_RELAXED);
  t.idle = false;
  t.newest_mark_ns = now;
  ++events_recorded_;
  return true;
}

void EventMarks::BeforeLaunch(StreamTrack& t, int64_t now) {
  const int64_t last = __atomic_load_n(&t.last_launch_ns, __ATOMIC_RELAXED);
  // Nothing of ours queued and the app paused: the interval starts at this launch, so that the
  // pause is not counted. (A launch-bound loop's short gaps are counted: its unlimited run has them
  // too.)
  if (!t.has_last_done) {
    if (t.count == 0) Record(t, /*start=*/true, now);
    return;
  }
  // Launches since the newest mark may still run: a start mark now would only complete after them,
  // and their time would be lost. The interval goes on (it counts the gap: conservative).
  if (now - last < kContinuousNs || __atomic_load_n(&t.unclosed, __ATOMIC_RELAXED) > 0) return;
  // The sampler may not have seen the stream drain yet (it polls every millisecond): after a pause
  // the newest mark tells, for one query.
  const bool drained =
      t.count == 0 ||
      (t.idle =
           driver_->event_query(t.ring[(t.head + t.count - 1) % kMarkRing].event) == CUDA_SUCCESS);
  if (drained) Record(t, /*start=*/true, now);
}

void EventMarks::RecordEnd(StreamTrack& t, int64_t now) {
  Record(t, /*start=*/false, now);
}

bool EventMarks::MayRecord(const StreamTrack& t, bool capturing) const {
  // Another thread's per-thread stream cannot be named from here; while a capture is in progress
  // a record could land in a graph instead of the stream.
  if (capturing) return false;
  return !t.per_thread || t.thread == static_cast<uintptr_t>(pthread_self());
}

void EventMarks::CloseOpen(int64_t now, bool capturing) {
  for (StreamTrack& t : tracks_) {
    if (!t.used || !MayRecord(t, capturing)) continue;
    if (__atomic_load_n(&t.unclosed, __ATOMIC_RELAXED) > 0) Record(t, false, now);
  }
}

int EventMarks::Poll(int64_t now, int64_t open_ns, bool capturing, TimeSpan* out, int max,
                     int64_t* busy_ns) {
  int n = 0;
  *busy_ns = 0;
  for (StreamTrack& t : tracks_) {
    if (!t.used) continue;
    const uint32_t unclosed = __atomic_load_n(&t.unclosed, __ATOMIC_RELAXED);
    if (t.count == 0 && unclosed == 0) continue;
    if (t.context != current_context_) {
      if (driver_->ctx_set_current == nullptr ||
          driver_->ctx_set_current(t.context) != CUDA_SUCCESS)
        continue;
      current_context_ = t.context;
    }
    // A batch nobody closed (the app went quiet without synchronising): close it so that it is
    // measured. Not on another thread's per-thread stream, nor during a capture.
    if (unclosed > 0 && now - t.newest_mark_ns >= open_ns && !t.per_thread && !capturing)
      Record(t, false, now);
    while (t.count > 0) {
      const Mark m = t.ring[t.head];
      const CUresult q = driver_->event_query(m.event);
      if (q == CUDA_ERROR_NOT_READY) break;
      t.head = (t.head + 1) % kMarkRing;
      --t.count;
      if (q == CUDA_SUCCESS && !m.start && t.has_last_done) {
        float ms = 0;
        if (driver_->event_elapsed_time(&ms, t.last_done.event, m.event) == CUDA_SUCCESS &&
            ms > 0) {
          const auto gpu = static_cast<int64_t>(static_cast<double>(ms) * 1e6);
          *busy_ns += gpu;
          if (n < max) out[n++] = TimeSpan{now - gpu, now};
        }
      }
      if (t.has_last_done) Release(t, t.last_done.event);
      if (q == CUDA_SUCCESS) {
        t.last_done = m;
        t.has_last_done = true;
      } else {  // the context went away: start over
        Release(t, m.event);
        t.has_last_done = false;
      }
    }
    t.idle = t.count == 0;
  }
  return n;
}

bool EventMarks::Idle() const {
  for (const StreamTrack& t : tracks_) {
    if (t.used && t.count > 0) return false;
  }
  return true;
}

void EventMarks::ForgetAfterFork() {
  // The events belonged to the parent's CUDA state: drop them without calling the driver.
  for (StreamTrack& t : tracks_) {
    const uint32_t generation = t.generation + 1;
    memset(static_cast<void*>(&t), 0, sizeof(t));
    t.generation = generation;
  }
  recent_ = 0;
  current_context_ = nullptr;
}

}  // namespace vgpu::sm
