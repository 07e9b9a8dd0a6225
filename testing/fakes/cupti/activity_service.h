#pragma once

// The activity API of the fake libcupti: which kinds are enabled, the client's callbacks, and the
// worker thread that turns the fake driver's kernel records (driver_link.h) into activity records
// and hands buffers to the client, as the real CUPTI's worker does:
// - only CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (and KERNEL, treated alike) is supported; a record
//   is made for each kernel launched while one of them was enabled, once it has completed;
// - buffers come from bufferRequested and go back through bufferCompleted, always on the worker;
// - while the client's callbacks are registered the worker collects every millisecond (records of
//   launches made while a kernel kind was enabled) and hands back buffers as they fill; with a
//   flush period set, full buffers only every period ("only full buffers");
// - cuptiActivityFlushAll has the worker hand back every buffer holding a record and waits
//   until it has;
// - the callback API is a subscription only (one at a time; no callback is ever made);
// - fault: with VGPU_FAKE_CUPTI_SILENT_ATTACHES=N the process's first N attachments (buffer
//   callbacks registered, until cuptiFinalize) take the kernel kinds and make no records.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "../fake_kernel_records.h"
#include "activity_buffer.h"
#include "cupti_api.h"

namespace vgpu::fake::cupti {

class ActivityService {
 public:
  static ActivityService& Get();  // never destroyed: the worker may outlive static destructors

  CUptiResult RegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                CUpti_BuffersCallbackCompleteFunc completed);
  CUptiResult RegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp);
  CUptiResult Enable(CUpti_ActivityKind kind);
  CUptiResult Disable(CUpti_ActivityKind kind);
  CUptiResult FlushAll(uint32_t flag);
  CUptiResult FlushPeriod(uint32_t ms);
  CUptiResult TakeDropped(size_t* dropped);
  CUptiResult Subscribe(CUpti_SubscriberHandle* subscriber);
  CUptiResult Unsubscribe(CUpti_SubscriberHandle subscriber);
  CUptiResult Finalize();  // ends the subscription too
  uint64_t Timestamp();    // cuptiGetTimestamp: the clock records are reported in

 private:
  // Launches (correlation ids [begin, end)) made while a kernel kind was enabled.
  struct Range {
    uint32_t begin;
    uint32_t end;
    CUpti_ActivityKind kind;
  };

  void LockForFork();
  void UnlockAfterFork(bool child);
  CUpti_ActivityKind RecordKind() const;
  // Expects collect_mu_ and mu_ held. Opens or closes a range when the enabled kinds changed.
  void UpdateRanges(bool was_enabled, CUpti_ActivityKind old_kind);
  uint32_t NextCorrelationId();  // expects collect_mu_ held; positions the cursor at first use
  void StartWorker();            // expects mu_ held
  void StopWorker(bool deliver);
  void Run();
  // The worker's steps.
  std::vector<VgpuFakeKernelRecord> TakeRecords(size_t* lost);
  void Collect();
  void Deliver(bool flushing);  // when not flushing, full buffers wait for the flush period

  std::mutex collect_mu_;  // the cursor: the worker's collections against Enable / Disable
  VgpuFakeKernelCursor cursor_{};

  std::mutex mu_;
  std::condition_variable wake_;     // to the worker
  std::condition_variable flushed_;  // from the worker
  CUpti_BuffersCallbackRequestFunc requested_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed_ = nullptr;
  CUpti_TimestampCallbackFunc timestamp_ = nullptr;
  bool subscribed_ = false;
  bool kernel_ = false;
  bool concurrent_ = false;
  std::vector<Range> ranges_;
  unsigned attaches_ = 0;  // buffer callbacks registered since start (after a finalize: again)
  bool silent_ = false;    // this attachment makes no records (VGPU_FAKE_CUPTI_SILENT_ATTACHES)
  uint32_t flush_period_ms_ = 0;
  uint64_t flush_requested_ = 0;
  uint64_t flush_done_ = 0;
  bool stop_ = false;
  bool stop_delivers_ = false;
  size_t dropped_ = 0;
  std::thread worker_;
  std::thread::id worker_id_;
  std::vector<std::thread> forgotten_;  // parents' workers, after fork (never destroyed)

  // The worker's own.
  BufferFiller filler_;
  std::vector<FilledBuffer> full_;
  int64_t last_periodic_ns_ = 0;
  int64_t grid_id_ = 0;
};

}  // namespace vgpu::fake::cupti
