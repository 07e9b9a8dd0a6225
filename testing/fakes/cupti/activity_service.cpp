#include "activity_service.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <new>

#include "../sim_clock.h"
#include "clock_offset.h"
#include "driver_link.h"

namespace vgpu::fake::cupti {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(1);  // collection period while enabled
constexpr unsigned kBatch = 256;                      // records per call of the export

bool IsKernelKind(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_KERNEL || kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
}

bool IsKnownKind(CUpti_ActivityKind kind) {
  return kind > CUPTI_ACTIVITY_KIND_INVALID && kind < CUPTI_ACTIVITY_KIND_COUNT;
}

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

CUpti_ActivityKernel10 MakeRecord(const VgpuFakeKernelRecord& r, CUpti_ActivityKind kind,
                                  int64_t offset, int64_t grid_id) {
  CUpti_ActivityKernel10 k{};
  k.kind = kind;
  k.start = static_cast<uint64_t>(static_cast<int64_t>(r.start_ns) + offset);
  k.end = static_cast<uint64_t>(static_cast<int64_t>(r.end_ns) + offset);
  k.completed = k.end;  // no child kernels
  k.deviceId = static_cast<uint32_t>(r.device);
  k.contextId = r.context_id;
  k.streamId = r.stream_id;
  k.correlationId = r.correlation_id;
  k.gridX = static_cast<int32_t>(r.grid[0]);
  k.gridY = static_cast<int32_t>(r.grid[1]);
  k.gridZ = static_cast<int32_t>(r.grid[2]);
  k.blockX = static_cast<int32_t>(r.block[0]);
  k.blockY = static_cast<int32_t>(r.block[1]);
  k.blockZ = static_cast<int32_t>(r.block[2]);
  k.gridId = grid_id;
  k.name = nullptr;  // the fake has no kernel names
  k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
  k.queued = CUPTI_TIMESTAMP_UNKNOWN;  // latency timestamps are not collected
  k.submitted = CUPTI_TIMESTAMP_UNKNOWN;
  return k;
}

// VGPU_FAKE_CUPTI_SILENT_ATTACHES=N: the process's first N attachments take the kernel kinds and
// make no records (a CUPTI that hands nothing back). Read once.
unsigned SilentAttaches() {
  static const unsigned n = [] {
    const char* v =
        std::getenv("VGPU_FAKE_CUPTI_SILENT_ATTACHES");  // NOLINT(concurrency-mt-unsafe)
    return v != nullptr ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : 0U;
  }();
  return n;
}

}  // namespace

ActivityService& ActivityService::Get() {
  static ActivityService* service = [] {
    auto* s = new ActivityService();  // NOLINT(cppcoreguidelines-owning-memory)
    // A fork while the worker holds a lock would leave it locked forever in the child: hold both
    // across the fork. The child has no worker: it starts its own if it goes on using CUPTI.
    (void)pthread_atfork([] { Get().LockForFork(); }, [] { Get().UnlockAfterFork(false); },
                         [] { Get().UnlockAfterFork(true); });
    return s;
  }();
  return *service;
}

void ActivityService::LockForFork() {
  collect_mu_.lock();
  mu_.lock();
}

void ActivityService::UnlockAfterFork(bool child) {
  if (child && worker_.joinable()) {
    // The parent's worker thread does not exist here: forget it without joining or detaching.
    forgotten_.push_back(std::move(worker_));
    worker_id_ = std::thread::id();
  }
  if (child) {
    // The condition variables still count the parent's waiters: start them afresh (reusing their
    // storage without destroying them, which is allowed and what a child must do).
    new (&wake_) std::condition_variable();
    new (&flushed_) std::condition_variable();
  }
  mu_.unlock();
  collect_mu_.unlock();
}

CUptiResult ActivityService::RegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                               CUpti_BuffersCallbackCompleteFunc completed) {
  if (requested == nullptr || completed == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(mu_);
  if (completed_ == nullptr) silent_ = ++attaches_ <= SilentAttaches();  // a new attachment
  requested_ = requested;
  completed_ = completed;
  StartWorker();
  wake_.notify_all();
  return CUPTI_SUCCESS;
}

CUptiResult ActivityService::RegisterTimestampCallback(CUpti_TimestampCallbackFunc timestamp) {
  if (timestamp == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(mu_);
  timestamp_ = timestamp;
  return CUPTI_SUCCESS;
}

CUpti_ActivityKind ActivityService::RecordKind() const {
  return concurrent_ || !kernel_ ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                 : CUPTI_ACTIVITY_KIND_KERNEL;
}

uint32_t ActivityService::NextCorrelationId() {
  VgpuFakeTakeKernelRecordsFn take = TakeKernelRecordsFn();
  unsigned n = 0;
  // No driver yet (or not initialized): no kernel has been launched, every future one counts.
  if (take == nullptr || take(&cursor_, nullptr, 0, &n) != 0) return 0;
  return cursor_.next_correlation_id;
}

void ActivityService::UpdateRanges(bool was_enabled, CUpti_ActivityKind old_kind) {
  if (silent_) return;  // no ranges: no records
  const bool enabled = kernel_ || concurrent_;
  if (was_enabled == enabled && (!enabled || RecordKind() == old_kind)) return;
  const uint32_t next = NextCorrelationId();
  if (was_enabled && !ranges_.empty()) ranges_.back().end = next;
  if (enabled) ranges_.push_back(Range{next, std::numeric_limits<uint32_t>::max(), RecordKind()});
}

CUptiResult ActivityService::Enable(CUpti_ActivityKind kind) {
  if (!IsKernelKind(kind))
    return IsKnownKind(kind) ? CUPTI_ERROR_NOT_COMPATIBLE : CUPTI_ERROR_INVALID_KIND;
  std::lock_guard<std::mutex> collect(collect_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_enabled = kernel_ || concurrent_;
  const CUpti_ActivityKind old_kind = RecordKind();
  (kind == CUPTI_ACTIVITY_KIND_KERNEL ? kernel_ : concurrent_) = true;
  UpdateRanges(was_enabled, old_kind);
  StartWorker();
  wake_.notify_all();
  return CUPTI_SUCCESS;
}

CUptiResult ActivityService::Disable(CUpti_ActivityKind kind) {
  if (!IsKernelKind(kind)) return IsKnownKind(kind) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_KIND;
  std::lock_guard<std::mutex> collect(collect_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_enabled = kernel_ || concurrent_;
  const CUpti_ActivityKind old_kind = RecordKind();
  (kind == CUPTI_ACTIVITY_KIND_KERNEL ? kernel_ : concurrent_) = false;
  UpdateRanges(was_enabled, old_kind);
  return CUPTI_SUCCESS;
}

CUptiResult ActivityService::FlushAll(uint32_t /*flag: records are complete when made*/) {
  std::unique_lock<std::mutex> lock(mu_);
  if (completed_ == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
  // From a callback, on the worker: it cannot wait for itself; the worker goes on after it.
  if (std::this_thread::get_id() == worker_id_) return CUPTI_SUCCESS;
  StartWorker();
  const uint64_t ticket = ++flush_requested_;
  wake_.notify_all();
  flushed_.wait(lock, [&] { return flush_done_ >= ticket || !worker_.joinable(); });
  return CUPTI_SUCCESS;
}

CUptiResult ActivityService::FlushPeriod(uint32_t ms) {
  std::lock_guard<std::mutex> lock(mu_);
  flush_period_ms_ = ms;
  return CUPTI_SUCCESS;
}

CUptiResult ActivityService::TakeDropped(size_t* dropped) {
  if (dropped == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(mu_);
  *dropped = dropped_;
  dropped_ = 0;
  return CUPTI_SUCCESS;
}

// No callback is ever made: the callback and its data are not kept.
CUptiResult ActivityService::Subscribe(CUpti_SubscriberHandle* subscriber) {
  if (subscriber == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(mu_);
  if (subscribed_) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  subscribed_ = true;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&subscribed_);
  return CUPTI_SUCCESS;
}

CUptiResult ActivityService::Unsubscribe(CUpti_SubscriberHandle subscriber) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!subscribed_ || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&subscribed_))
    return CUPTI_ERROR_INVALID_PARAMETER;
  subscribed_ = false;
  return CUPTI_SUCCESS;
}

CUptiResult ActivityService::Finalize() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::this_thread::get_id() == worker_id_) return CUPTI_ERROR_INVALID_OPERATION;
  }
  StopWorker(/*deliver=*/true);  // hands every buffer back on its way out
  std::lock_guard<std::mutex> collect(collect_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  cursor_ = VgpuFakeKernelCursor{};
  requested_ = nullptr;
  completed_ = nullptr;
  timestamp_ = nullptr;
  subscribed_ = false;
  kernel_ = false;
  concurrent_ = false;
  ranges_.clear();
  flush_period_ms_ = 0;
  dropped_ = 0;
  return CUPTI_SUCCESS;
}

uint64_t ActivityService::Timestamp() {
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    timestamp = timestamp_;
  }
  return timestamp != nullptr ? timestamp() : static_cast<uint64_t>(RealtimeNs());
}

void ActivityService::StartWorker() {
  if (worker_.joinable()) return;
  static std::once_flag at_exit;
  // Stopped before the client's static objects go away; buffers not flushed by then are lost.
  std::call_once(at_exit, [] { (void)std::atexit([] { Get().StopWorker(/*deliver=*/false); }); });
  stop_ = false;
  worker_ = std::thread([this] { Run(); });
  worker_id_ = worker_.get_id();
}

void ActivityService::StopWorker(bool deliver) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_.joinable()) return;
    stop_ = true;
    stop_delivers_ = deliver;
    wake_.notify_all();
  }
  worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  worker_ = std::thread();
  worker_id_ = std::thread::id();
  stop_ = false;
  flushed_.notify_all();
}

void ActivityService::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // While the client is attached: with the kinds off too, so that the records of kernels
    // launched before a disable still arrive, and the driver's ring, which keeps every kernel of
    // the process, is followed (records it overwrote while nobody read are not drops).
    const bool collecting = requested_ != nullptr;
    auto woken = [&] {
      return stop_ || flush_requested_ != flush_done_ || (!collecting && requested_ != nullptr);
    };
    if (collecting) {
      wake_.wait_for(lock, kPoll, woken);
    } else {
      wake_.wait(lock, woken);
    }
    if (stop_) break;
    const uint64_t ticket = flush_requested_;
    const bool flushing = ticket != flush_done_;
    lock.unlock();
    Collect();
    if (flushing) filler_.Close(&full_, /*even_empty=*/false);
    Deliver(flushing);
    lock.lock();
    if (flushing) {
      flush_done_ = ticket;
      flushed_.notify_all();
    }
  }
  const bool deliver = stop_delivers_;
  lock.unlock();
  if (deliver) {
    Collect();
    filler_.Close(&full_, /*even_empty=*/true);  // an empty one too: the client owns it
    Deliver(true);
  }
}

std::vector<VgpuFakeKernelRecord> ActivityService::TakeRecords(size_t* lost) {
  std::vector<VgpuFakeKernelRecord> out;
  std::lock_guard<std::mutex> collect(collect_mu_);
  VgpuFakeTakeKernelRecordsFn take = TakeKernelRecordsFn();
  if (take == nullptr) return out;
  const unsigned long long lost_before = cursor_.lost;
  if (cursor_.started == 0) {
    // Attached, nothing enabled yet: follow the ring from now on (a zeroed cursor's first call
    // positions it). Enabled but never positioned (the driver was not there at enable): no
    // kernel had been launched then, so the whole history counts; the correlation ranges leave
    // out what does not. (ranges_ changes under collect_mu_ too.)
    if (ranges_.empty()) {
      unsigned n = 0;
      (void)take(&cursor_, nullptr, 0, &n);
      return out;
    }
    cursor_ = VgpuFakeKernelCursor{};
    cursor_.started = 1;
  }
  VgpuFakeKernelRecord batch[kBatch];
  unsigned n = 0;
  do {
    if (take(&cursor_, batch, kBatch, &n) != 0) break;
    out.insert(out.end(), batch, batch + n);
  } while (n == kBatch);
  *lost = static_cast<size_t>(cursor_.lost - lost_before);
  return out;
}

void ActivityService::Collect() {
  size_t lost = 0;
  const std::vector<VgpuFakeKernelRecord> records = TakeRecords(&lost);
  // Read after the records were taken: every enable that preceded one of their launches is in.
  std::vector<Range> ranges;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ranges = ranges_;
    requested = requested_;
    timestamp = timestamp_;
  }
  size_t dropped = lost;
  if (!records.empty()) {
    const int64_t before = NowNs();
    const int64_t other = timestamp != nullptr ? static_cast<int64_t>(timestamp()) : RealtimeNs();
    const int64_t offset = ClockOffset(before, other, NowNs());
    for (const auto& r : records) {
      const auto range = std::find_if(ranges.begin(), ranges.end(), [&](const Range& x) {
        return r.correlation_id >= x.begin && r.correlation_id < x.end;
      });
      if (range == ranges.end()) continue;  // launched while disabled
      if (!filler_.Append(MakeRecord(r, range->kind, offset, ++grid_id_), requested, &full_))
        ++dropped;
    }
  }
  if (dropped > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    dropped_ += dropped;
  }
}

void ActivityService::Deliver(bool flushing) {
  if (full_.empty()) return;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  uint32_t period_ms = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    completed = completed_;
    period_ms = flush_period_ms_;
  }
  // With a flush period, full buffers wait for the next period (a flush takes them at once).
  const int64_t now = NowNs();
  if (!flushing && period_ms > 0 &&
      now - last_periodic_ns_ < static_cast<int64_t>(period_ms) * 1'000'000) {
    return;
  }
  if (period_ms > 0 && !flushing) last_periodic_ns_ = now;
  if (completed == nullptr) return;
  for (const auto& b : full_) completed(nullptr, 0, b.data, b.size, b.valid);
  full_.clear();
}

}  // namespace vgpu::fake::cupti
