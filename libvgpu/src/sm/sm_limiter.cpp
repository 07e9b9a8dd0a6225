// The SM limiter behind libvgpu's launch hooks (sm_limit.h). Design: docs/sm-limit.md.
//
// Per limited device the process keeps, for every stream it launches on, a ring of CUDA events
// ("marks") recorded around its submissions. When a mark completes, the event-measured GPU time
// since the previous mark of that stream is charged to the container's shared GCRA budget;
// launches wait while the budget is in debt. Limited tenants of a GPU take turns through a
// node-wide lease (peer_table.h), so that the GPU time an event measures is the tenant's own.
// Linked into libvgpu.so: no libstdc++, no allocation, no exceptions, no threads.

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../sm_limit.h"
#include "gcra.h"
#include "launch_accounting.h"
#include "peer_table.h"
#include "sm_config.h"

int vgpu_sm_any_limited = 0;

namespace vgpu::sm {
namespace {

constexpr int kMaxDevices = VGPU_SM_MAX_DEVICES;
constexpr int kMaxStreams = 32;
constexpr int kMarkRing = 12;
constexpr int kEventPool = 16;
constexpr int64_t kBurstNs = 200'000'000;  // unused budget kept for at most 200 ms
constexpr int64_t kBudgetSleepStepNs = 2'000'000;
// Out of budget with nothing of ours left on the GPU, there is nothing to charge meanwhile: wake
// less often (the wait is recomputed after every step, so a budget charged meanwhile by another
// process of the container still counts).
constexpr int64_t kIdleBudgetSleepStepNs = 50'000'000;
constexpr int32_t kSharedCreditDefaultMs = 20;  // see ResumeAtNs
// A tenant alone on its GPU runs longer stretches (AloneResumeCreditNs): VGPU_SM_ALONE_BURST_MS of
// GPU work (default 1000), waiting at most 1 s in between. Whether others are there is looked up
// at most once a second.
constexpr int32_t kAloneBurstDefaultMs = 1000;
constexpr int64_t kAloneWaitMaxNs = 1'000'000'000;
constexpr int64_t kAloneCheckIntervalNs = 1'000'000'000;
constexpr int64_t kQueueSleepStepNs = 100'000;
constexpr int64_t kLeaseSleepStepNs = 100'000;
constexpr int64_t kContinuousNs = 100'000;
// A hand-over gap longer than this is not the wake-up of the next holder (see BeforeLaunch).
constexpr int64_t kMaxHandoverGapNs = 5'000'000;
// Querying an event that is pending or just completed costs ~1.2 us of host time on an H100
// (bench/libvgpu/limited_launch_cost.cu, `events 16 5` vs `events 16 50`): polled every 50 us,
// that was ~2.5 % of a launch-bound loop; every 500 us it is 0.25 %.
constexpr int64_t kPollIntervalNs = 500'000;
constexpr int64_t kExtendIntervalNs =
    1'000'000;                                   // launches closer than this form one busy interval
constexpr int64_t kLeaseWaitStepNs = 2'000'000;  // re-check a lease that may time out
constexpr int64_t kLeaseSlackNs =
    10'000'000;  // a lease outlives the estimate of queued work by this
constexpr AccountingParams kParams{};
static_assert(kParams.max_marks == kMarkRing, "ring size and queue bound must agree");

enum : int32_t { kStateUnknown = 0, kStateUnlimited = 1, kStateLimited = 2 };

struct Mark {
  CUevent event;
  int64_t host_ns;     // when it was recorded
  int64_t est_ns;      // estimated GPU work it closes (0 for a start mark)
  uint32_t launches;   // launches it closes (0 for a start mark)
  bool start;          // recorded on an idle stream before a launch: opens an interval
  int64_t overlap_ns;  // start marks: the previous lease holder's work still queued then
};

struct StreamTrack {
  bool used;
  uintptr_t key;
  CUstream stream;
  Mark ring[kMarkRing];
  uint32_t head;
  uint32_t count;
  Mark last_done;  // newest completed mark: where the next interval starts
  bool has_last_done;
  int64_t est_per_launch_ns;  // measured GPU time per launch (moving average)
  bool gpu_waited;            // at the last poll, no measured work was queued (OwnOverheadNs)
  uint32_t unrecorded;
  int64_t first_unrecorded_ns;
  int64_t last_launch_ns;  // host time of the newest launch on the stream
  uint64_t last_turn;      // the process's turn on the GPU (PeerTable::turn) at that launch
  uint32_t in_launch;      // launches between their BeforeLaunch and AfterLaunch: keep the slot
  CUevent pool[kEventPool];
  uint32_t pool_count;
};

// Launches sent past the full path (FastLaunch) since the device was last locked. Written by the
// thread whose fast window is open, folded into `fast_track`'s batch by whichever thread locks the
// device next (LockDevice). Process-private: no shared-memory write on the fast pass.
struct alignas(64) FastLaunches {
  uint64_t epoch;    // bumped at every lock of the device: a window opened before it is over
  uint32_t pending;  // launches not folded yet
  int64_t first_ns;  // host time of the first of them
  int64_t last_ns;   // host time of the newest launch of the window's thread (fast or not)
};

struct Device {
  pthread_mutex_t mu;
  int32_t state;
  int32_t percent;
  Policy policy;
  Priority priority;
  VgpuSmDeviceShared* shared;
  int32_t* sharing;  // the node monitor's flag (VGPU_SM_SHARING_*)
  PeerTable peers;
  bool peers_tried;
  int64_t last_poll_ns;    // last ProcessCompletions from the launch path
  int64_t last_extend_ns;  // last lease extension from the launch path
  uint32_t recent_stream;  // index of the stream of the latest launch (FindStream)
  bool alone;              // no other limited tenant on this GPU, as last looked up
  int64_t alone_checked_ns;
  StreamTrack streams[kMaxStreams];
  VgpuSmStats stats;
  StreamTrack* fast_track;  // the stream of the latest fast window (FastLaunches)
  FastLaunches fast;
};

constinit VgpuSmDriver g_driver{};
constinit bool g_initialised = false;
constinit Device g_devices[kMaxDevices]{};
constinit pthread_mutex_t g_global_mu = PTHREAD_MUTEX_INITIALIZER;
constinit VgpuSmStateResolver g_resolver = nullptr;
constinit VgpuSmDeviceShared* g_region_devices = nullptr;
constinit int g_region_count = 0;
constinit VgpuSmRegion* g_side_region = nullptr;
constinit bool g_side_tried = false;
constinit VgpuSmDeviceShared g_private[kMaxDevices]{};
constinit int64_t g_alone_burst_ns = int64_t{kAloneBurstDefaultMs} * 1'000'000;
// The budget a throttled launch waits to build up beside other tenants (VGPU_SM_SHARED_CREDIT_MS).
constinit int64_t g_shared_credit_ns = int64_t{kSharedCreditDefaultMs} * 1'000'000;
// The launch hooks' own cost per launch (moving average of every 256th launch, timed): what a
// launch-bound stream is not charged (OwnOverheadNs).
constinit int64_t g_hook_ns_est = 0;
constexpr uint32_t kHookSampleMask = 255;
constexpr int64_t kHookSampleMaxNs = 5'000;  // longer: the hook waited (budget, queue, lease)

// What BeforeLaunch let through, for the AfterLaunch of the same launch (always on the same thread,
// right after the driver's launch): spares AfterLaunch a cuCtxGetDevice, a stream lookup and a
// clock read. `device` is null when the launch is not measured.
struct ArmedLaunch {
  Device* device;
  StreamTrack* track;  // held for this launch (in_launch): not recycled before AfterLaunch
  int64_t at_ns;
};
// initial-exec: no __tls_get_addr (libvgpu links nothing from ld.so), and the library is preloaded,
// so its 32 bytes come from the static TLS block (or the surplus glibc keeps for a late dlopen).
__attribute__((tls_model("initial-exec"))) thread_local constinit ArmedLaunch t_armed{};

// The fast window a full launch opened for its thread (FastWindowAfterLaunch): further launches of
// the thread onto the same stream and device go past the full path while it lasts.
struct ThreadFastWindow {
  Device* device;  // null: none
  uintptr_t key;   // the stream (StreamKey)
  uint64_t epoch;  // the device's FastLaunches::epoch when opened
  int64_t until_ns;
  uint32_t launches_left;
};
__attribute__((tls_model("initial-exec"))) thread_local constinit ThreadFastWindow t_window{};

// Stream captures in progress in the process, counted by libvgpu's cuStreamBeginCapture* and
// cuStreamEndCapture hooks: while there are none, a launch cannot be going into a graph and the
// capture query (a driver call per launch) is skipped.
constinit int g_captures_active = 0;

const char* GetEnv(const char* name) {
  return getenv(name);
}

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void SleepNs(int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

// One line to stderr, cut at `size` (snprintf's `n` may exceed it); no allocation, no stdio lock.
void WriteLine(const char* line, int n, size_t size) {
  if (n <= 0) return;
  ssize_t ignored = write(2, line, static_cast<size_t>(n) < size ? n : size - 1);
  (void)ignored;
}

void Warn(const char* message) {
  char line[512];
  WriteLine(line, snprintf(line, sizeof(line), "[vgpu sm-limit] %s\n", message), sizeof(line));
}

// The container's SM blocks when libvgpu's region provides none: `<shared cache>.sm`.
VgpuSmRegion* MapSideRegion() {
  const char* base = GetEnv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
  if (base == nullptr || *base == '\0') base = "/tmp/cudevshr.cache";
  char path[512];
  if (snprintf(path, sizeof(path), "%s.sm", base) >= static_cast<int>(sizeof(path))) return nullptr;
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return nullptr;
  const off_t size = static_cast<off_t>(sizeof(VgpuSmRegion));
  void* map = MAP_FAILED;
  if (lseek(fd, 0, SEEK_END) >= size || ftruncate(fd, size) == 0) {
    map = mmap(nullptr, sizeof(VgpuSmRegion), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  close(fd);  // the mapping stays valid
  if (map == MAP_FAILED) return nullptr;
  auto* region = static_cast<VgpuSmRegion*>(map);
  uint32_t expected = 0;
  if (__atomic_compare_exchange_n(&region->magic, &expected, VGPU_SM_REGION_MAGIC, false,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(&region->version, VGPU_SM_REGION_VERSION, __ATOMIC_RELEASE);
    __atomic_store_n(&region->size, static_cast<uint32_t>(sizeof(VgpuSmRegion)), __ATOMIC_RELEASE);
  } else if (expected != VGPU_SM_REGION_MAGIC) {
    munmap(map, sizeof(VgpuSmRegion));
    return nullptr;
  }
  return region;
}

VgpuSmDeviceShared* SharedFor(int device) {
  pthread_mutex_lock(&g_global_mu);
  VgpuSmDeviceShared* result = nullptr;
  if (g_region_devices != nullptr && device < g_region_count) {
    result = &g_region_devices[device];
  } else {
    if (!g_side_tried) {
      g_side_tried = true;
      g_side_region = MapSideRegion();
      if (g_side_region == nullptr)
        Warn(
            "cannot map the SM budget file next to CUDA_DEVICE_MEMORY_SHARED_CACHE; the limit "
            "holds per process instead of per container");
    }
    result = g_side_region != nullptr ? &g_side_region->devices[device] : &g_private[device];
  }
  pthread_mutex_unlock(&g_global_mu);
  return result;
}

void OpenPeers(Device& d, CUdevice device) {
  d.peers_tried = true;
  CUuuid uuid{};
  if (g_driver.device_get_uuid == nullptr ||
      g_driver.device_get_uuid(&uuid, device) != CUDA_SUCCESS)
    return;
  char text[40];
  static constexpr char kHex[] = "0123456789abcdef";
  int n = 0;
  for (int i = 0; i < 16; ++i) {
    auto byte = static_cast<unsigned char>(uuid.bytes[i]);
    text[n++] = kHex[byte >> 4];
    text[n++] = kHex[byte & 15];
  }
  text[n] = '\0';
  const char* dir = GetEnv("VGPU_SM_PEER_DIR");
  if (dir == nullptr || *dir == '\0') dir = "/tmp/vgpulock";
  d.peers.Open(dir, text, static_cast<int32_t>(d.priority));
}

void InitDevice(Device& d, CUdevice device) {
  DeviceSettings settings = SettingsForDevice(GetEnv, device);
  if (settings.malformed)
    Warn(
        "ignoring a malformed CUDA_DEVICE_SM_LIMIT*, GPU_CORE_UTILIZATION_POLICY or "
        "CUDA_TASK_PRIORITY value (expected a percent 0-100, force|default|disable, 0|1)");
  d.percent = settings.percent;
  d.policy = settings.policy;
  d.priority = settings.priority;
  d.stats.percent = settings.percent;
  d.alone = false;
  d.alone_checked_ns = 0;
  if (settings.percent <= 0) {
    __atomic_store_n(&d.state, kStateUnlimited, __ATOMIC_RELEASE);
    return;
  }
  d.shared = nullptr;
  if (g_resolver != nullptr && g_resolver(device, &d.shared, &d.sharing) != 0) d.shared = nullptr;
  if (d.shared == nullptr) {
    d.shared = SharedFor(device);
    d.sharing = &d.shared->sharing;
  }
  // A fresh budget starts paid up to now, not with a burst of saved-up credit.
  int64_t fresh = 0;
  __atomic_compare_exchange_n(&d.shared->tat_ns, &fresh, NowNs(), false, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  OpenPeers(d, device);
  __atomic_store_n(&d.state, kStateLimited, __ATOMIC_RELEASE);
}

bool Enforcing(const Device& d) {
  if (d.policy == Policy::kForce) return true;
  return __atomic_load_n(d.sharing, __ATOMIC_RELAXED) != VGPU_SM_SHARING_ALONE;
}

int64_t AloneCreditNs(const Device& d) {
  return AloneResumeCreditNs(d.percent, g_alone_burst_ns, kAloneWaitMaxNs, g_shared_credit_ns);
}

int64_t BurstNs(const Device& d) {
  // A low-priority tenant keeps no saved-up budget while a high-priority one is busy: it runs
  // strictly at its rate, never in bursts that would queue ahead of the high-priority work.
  if (d.priority == Priority::kLow && d.peers.HighPriorityWaiting()) return 0;
  // Alone, the window must keep the longer wait between stretches (ResumeAtNs).
  if (d.alone) {
    const int64_t credit = AloneCreditNs(d);
    return credit > kBurstNs ? credit : kBurstNs;
  }
  return kBurstNs;
}

// How much budget a throttled launch waits to build up before it goes (ResumeAtNs).
int64_t ResumeCreditNs(Device& d, int64_t now) {
  if (g_alone_burst_ns <= 0) return g_shared_credit_ns;
  if (now - d.alone_checked_ns >= kAloneCheckIntervalNs) {
    d.alone = !d.peers.OthersPresent();
    d.alone_checked_ns = now;
  }
  return d.alone ? AloneCreditNs(d) : g_shared_credit_ns;
}

void Charge(Device& d, int64_t gpu_ns, int64_t measured_ns, int64_t now) {
  if (gpu_ns > 0) ChargeShared(&d.shared->tat_ns, now, BurstNs(d), CostWallNs(gpu_ns, d.percent));
  __atomic_fetch_add(&d.shared->charged_ns, static_cast<uint64_t>(gpu_ns > 0 ? gpu_ns : 0),
                     __ATOMIC_RELAXED);
  __atomic_fetch_add(&d.shared->measured_ns,
                     static_cast<uint64_t>(measured_ns > 0 ? measured_ns : 0), __ATOMIC_RELAXED);
  d.stats.charged_ns += static_cast<uint64_t>(gpu_ns > 0 ? gpu_ns : 0);
  d.stats.measured_ns += static_cast<uint64_t>(measured_ns > 0 ? measured_ns : 0);
}

void ReleaseEvent(StreamTrack& t, CUevent event) {
  if (event == nullptr) return;
  if (t.pool_count < kEventPool) {
    t.pool[t.pool_count++] = event;
  } else {
    g_driver.event_destroy(event);
  }
}

bool RecordMark(Device& d, StreamTrack& t, bool start, int64_t now) {
  if (t.count >= kMarkRing) return false;
  CUevent event = nullptr;
  if (t.pool_count > 0) {
    event = t.pool[--t.pool_count];
  } else if (g_driver.event_create(&event, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    return false;
  }
  if (g_driver.event_record(event, t.stream) != CUDA_SUCCESS) {
    ReleaseEvent(t, event);
    return false;
  }
  Mark& m = t.ring[(t.head + t.count) % kMarkRing];
  m.event = event;
  m.host_ns = now;
  m.start = start;
  m.overlap_ns = 0;
  m.launches = start ? 0 : t.unrecorded;
  m.est_ns = start ? 0 : static_cast<int64_t>(t.unrecorded) * t.est_per_launch_ns;
  ++t.count;
  if (!start) t.unrecorded = 0;
  ++d.stats.events_recorded;
  return true;
}

uint32_t OutstandingEndMarks(const StreamTrack& t) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < t.count; ++i) n += !t.ring[(t.head + i) % kMarkRing].start;
  return n;
}

int64_t OutstandingEst(const StreamTrack& t) {
  int64_t sum = static_cast<int64_t>(t.unrecorded) * t.est_per_launch_ns;
  for (uint32_t i = 0; i < t.count; ++i) sum += t.ring[(t.head + i) % kMarkRing].est_ns;
  return sum;
}

// Charges every completed mark of every stream of the device; marks the process idle on the GPU
// when nothing is left in flight.
void ProcessCompletions(Device& d, int64_t now) {
  bool anything_in_flight = false;
  int64_t in_flight_est = 0;
  for (StreamTrack& t : d.streams) {
    if (!t.used) continue;
    while (t.count > 0) {
      Mark m = t.ring[t.head];
      CUresult q = g_driver.event_query(m.event);
      if (q == CUDA_ERROR_NOT_READY) break;
      t.head = (t.head + 1) % kMarkRing;
      --t.count;
      if (q != CUDA_SUCCESS) {  // context gone, event invalid: charge what we expected
        Charge(d, m.est_ns, 0, now);
        continue;
      }
      if (!m.start) {
        float ms = 0;
        if (t.has_last_done &&
            g_driver.event_elapsed_time(&ms, t.last_done.event, m.event) == CUDA_SUCCESS &&
            ms >= 0) {
          auto measured = static_cast<int64_t>(static_cast<double>(ms) * 1e6);
          int64_t charged = measured;
          if (t.last_done.start && t.last_done.overlap_ns > 0) {
            // Our turn began behind the previous holder's last batch: that part is theirs. The
            // overlap is an estimate, so never take more than three quarters of the interval.
            int64_t overlap = t.last_done.overlap_ns;
            if (overlap > measured - measured / 4) overlap = measured - measured / 4;
            charged -= overlap;
          }
          charged -= OwnOverheadNs(charged, m.launches,
                                   __atomic_load_n(&g_hook_ns_est, __ATOMIC_RELAXED), t.gpu_waited);
          Charge(d, charged, measured, now);
          t.est_per_launch_ns = UpdateEstimate(t.est_per_launch_ns, measured, m.launches);
        } else {
          Charge(d, m.est_ns, 0, now);
        }
      }
      if (t.has_last_done) ReleaseEvent(t, t.last_done.event);
      t.last_done = m;
      t.has_last_done = true;
    }
    if (t.count > 0 || t.unrecorded > 0) {
      anything_in_flight = true;
      in_flight_est += OutstandingEst(t);
    }
  }
  if (anything_in_flight) d.peers.Extend(now + in_flight_est + kLeaseSlackNs);
}

// End marks recorded and not yet completed, over every stream of the device. Launches that no
// mark closed yet do not count: nothing may ever complete them.
uint32_t RecordedEndMarksAll(const Device& d) {
  uint32_t n = 0;
  for (const StreamTrack& t : d.streams) {
    if (t.used) n += OutstandingEndMarks(t);
  }
  return n;
}

bool RecordedWorkInFlight(const Device& d) {
  for (const StreamTrack& t : d.streams) {
    if (t.used && t.count > 0) return true;
  }
  return false;
}

int64_t DeviceOutstandingEst(const Device& d) {
  int64_t sum = 0;
  for (const StreamTrack& t : d.streams) {
    if (t.used) sum += OutstandingEst(t);
  }
  return sum;
}

uintptr_t StreamKey(CUstream stream, int per_thread) {
  if (stream == CU_STREAM_LEGACY) stream = nullptr;
  if (stream == nullptr && per_thread != 0)
    return reinterpret_cast<uintptr_t>(CU_STREAM_PER_THREAD) ^
           (static_cast<uintptr_t>(pthread_self()) << 4);
  if (stream == CU_STREAM_PER_THREAD)
    return reinterpret_cast<uintptr_t>(stream) ^ (static_cast<uintptr_t>(pthread_self()) << 4);
  return reinterpret_cast<uintptr_t>(stream);
}

void ForgetStream(StreamTrack& t) {
  if (t.has_last_done) g_driver.event_destroy(t.last_done.event);
  for (uint32_t i = 0; i < t.pool_count; ++i) g_driver.event_destroy(t.pool[i]);
  memset(&t, 0, sizeof(t));
}

// The track of `key` (creating one, or recycling an idle one), or nullptr when all are busy.
StreamTrack* FindStreamSlot(Device& d, CUstream stream, int per_thread, uintptr_t key) {
  StreamTrack* free_slot = nullptr;
  StreamTrack* idle_slot = nullptr;
  for (StreamTrack& t : d.streams) {
    if (t.used && t.key == key) return &t;
    if (!t.used && free_slot == nullptr) free_slot = &t;
    if (t.used && t.count == 0 && t.unrecorded == 0 && t.in_launch == 0 && idle_slot == nullptr)
      idle_slot = &t;
  }
  if (free_slot == nullptr && idle_slot != nullptr) {
    ForgetStream(*idle_slot);  // more streams than slots: recycle an idle one
    free_slot = idle_slot;
  }
  if (free_slot == nullptr) return nullptr;  // 32 streams all busy: this launch goes unmeasured
  free_slot->used = true;
  free_slot->key = key;
  if (stream == CU_STREAM_LEGACY) stream = nullptr;
  free_slot->stream = (stream == nullptr && per_thread != 0) ? CU_STREAM_PER_THREAD : stream;
  return free_slot;
}

StreamTrack* FindStream(Device& d, CUstream stream, int per_thread) {
  const uintptr_t key = StreamKey(stream, per_thread);
  // Most launches go to the stream of the launch before: the 32 tracks span ~20 KB, and a scan of
  // them after the application has run its own code between launches is mostly cache misses.
  StreamTrack& recent = d.streams[d.recent_stream];
  if (recent.used && recent.key == key) return &recent;
  StreamTrack* found = FindStreamSlot(d, stream, per_thread, key);
  if (found != nullptr) d.recent_stream = static_cast<uint32_t>(found - d.streams);
  return found;
}

// Records an end mark on every stream with launches that no mark closed yet, so that what they
// run is measured and its completion seen: before a budget wait, a hand-over, and a
// synchronisation (the app waits for the GPU: its batch is complete). Another thread's per-thread
// stream cannot be named from here, and while a capture is in progress only `current` (a launch's
// stream, known not to be capturing) is safe to record into: the others keep their open batch,
// charged by estimate when the stream is next used.
void CloseOpenBatches(Device& d, StreamTrack* current, int64_t now) {
  const bool capturing = __atomic_load_n(&g_captures_active, __ATOMIC_RELAXED) > 0;
  const uintptr_t own_per_thread = StreamKey(nullptr, 1);
  for (StreamTrack& t : d.streams) {
    if (!t.used || t.unrecorded == 0) continue;
    if (&t != current &&
        (capturing || (t.stream == CU_STREAM_PER_THREAD && t.key != own_per_thread)))
      continue;
    RecordMark(d, t, /*start=*/false, now);
  }
}

// Launches of a fast window count as launches of its stream's open batch, as if each had taken
// the full path (last_launch_ns too, for the next launch's pause check). A launch counted after
// its window's stream was recycled is counted in the statistics only.
void FoldFastLaunches(Device& d) {
  // Most locks find nothing to fold: a plain load spares them the read-modify-write.
  if (__atomic_load_n(&d.fast.pending, __ATOMIC_ACQUIRE) == 0) {
    return;
  }
  const uint32_t n = __atomic_exchange_n(&d.fast.pending, 0, __ATOMIC_ACQ_REL);
  d.stats.launches += n;
  d.stats.fast_launches += n;
  StreamTrack* t = d.fast_track;
  if (t == nullptr || !t->used) {
    return;
  }
  if (t->unrecorded == 0) {
    t->first_unrecorded_ns = __atomic_load_n(&d.fast.first_ns, __ATOMIC_RELAXED);
  }
  t->unrecorded += n;
  const int64_t last = __atomic_load_n(&d.fast.last_ns, __ATOMIC_RELAXED);
  if (last > t->last_launch_ns) {
    t->last_launch_ns = last;
  }
}

// Every section under the device's lock may change what a fast window relies on (the lease, the
// queue, the batch): it folds the fast launches in and ends every window opened before.
void LockDevice(Device& d) {
  pthread_mutex_lock(&d.mu);
  FoldFastLaunches(d);
  // Only lock holders write the epoch; fast passes read it without the lock.
  __atomic_store_n(&d.fast.epoch, __atomic_load_n(&d.fast.epoch, __ATOMIC_RELAXED) + 1,
                   __ATOMIC_RELEASE);
}

// The device of the launch, already initialised, or nullptr when it is not limited now.
// Returns with d->mu held when non-null.
Device* LockLimitedDevice() {
  CUdevice device = 0;
  if (g_driver.ctx_get_device == nullptr || g_driver.ctx_get_device(&device) != CUDA_SUCCESS)
    return nullptr;
  if (device < 0 || device >= kMaxDevices) return nullptr;
  Device& d = g_devices[device];
  const int32_t state = __atomic_load_n(&d.state, __ATOMIC_ACQUIRE);
  // Lifted by the node monitor (policy `default`, the container alone on the GPU): a launch then
  // costs a flag read, not the device's lock.
  if (state == kStateUnlimited || (state == kStateLimited && !Enforcing(d))) {
    return nullptr;
  }
  LockDevice(d);
  if (d.state == kStateUnknown) InitDevice(d, device);
  if (d.state != kStateLimited || !Enforcing(d)) {
    pthread_mutex_unlock(&d.mu);
    return nullptr;
  }
  return &d;
}

bool Capturing(CUstream stream, int per_thread) {
  if (__atomic_load_n(&g_captures_active, __ATOMIC_RELAXED) <= 0) return false;
  if (g_driver.stream_is_capturing == nullptr) return false;
  if (stream == nullptr && per_thread != 0) stream = CU_STREAM_PER_THREAD;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (g_driver.stream_is_capturing(stream, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// The fast pass: true when this launch is inside its thread's fast window (same device and
// stream, no capture, no pause of the app, budget not in debt) and has been counted. It reads the
// window, the device's fast line and the budget word, and writes only the fast line.
bool FastLaunch(CUstream stream, int per_thread) {
  ThreadFastWindow& w = t_window;
  if (w.device == nullptr || w.launches_left == 0 ||
      __atomic_load_n(&g_captures_active, __ATOMIC_RELAXED) > 0) {
    return false;
  }
  CUdevice device = 0;
  if (g_driver.ctx_get_device(&device) != CUDA_SUCCESS || device < 0 || device >= kMaxDevices ||
      &g_devices[device] != w.device || StreamKey(stream, per_thread) != w.key) {
    return false;
  }
  Device& d = *w.device;
  if (__atomic_load_n(&d.fast.epoch, __ATOMIC_ACQUIRE) != w.epoch) {
    return false;
  }
  const int64_t now = NowNs();
  if (now >= w.until_ns ||
      now - __atomic_load_n(&d.fast.last_ns, __ATOMIC_RELAXED) >= kContinuousNs ||
      WaitNs(__atomic_load_n(&d.shared->tat_ns, __ATOMIC_RELAXED), now) > 0) {
    return false;
  }
  --w.launches_left;
  __atomic_store_n(&d.fast.last_ns, now, __ATOMIC_RELAXED);
  if (__atomic_fetch_add(&d.fast.pending, 1, __ATOMIC_ACQ_REL) == 0) {
    __atomic_store_n(&d.fast.first_ns, now, __ATOMIC_RELAXED);
  }
  return true;
}

// After a launch through the full path (d.mu held): how far the thread's next launches may go
// past it (FastWindowAfterLaunch).
void OpenFastWindow(Device& d, StreamTrack& t, int64_t now) {
  ThreadFastWindow& w = t_window;
  w.device = nullptr;
  // Before the stream's first mark completes, a launch after a pause must open the interval.
  if (__atomic_load_n(&g_captures_active, __ATOMIC_RELAXED) > 0 ||
      (!t.has_last_done && t.count == 0)) {
    return;
  }
  const FastWindow window = FastWindowAfterLaunch(
      kParams, FastWindowInput{.now_ns = now,
                               .est_per_launch_ns = t.est_per_launch_ns,
                               .unrecorded = t.unrecorded,
                               .first_unrecorded_ns = t.first_unrecorded_ns,
                               .end_marks = OutstandingEndMarks(t),
                               .marks = t.count,
                               .outstanding_est_ns = OutstandingEst(t),
                               .poll_due_ns = d.last_poll_ns + kPollIntervalNs,
                               .extend_due_ns = d.last_extend_ns + kExtendIntervalNs});
  if (window.launches == 0) {
    return;
  }
  d.fast_track = &t;
  __atomic_store_n(&d.fast.last_ns, now, __ATOMIC_RELAXED);
  w = ThreadFastWindow{&d, t.key, __atomic_load_n(&d.fast.epoch, __ATOMIC_RELAXED), window.until_ns,
                       window.launches};
}

void BeforeLaunch(CUstream stream, int per_thread) {
  t_armed.device = nullptr;
  if (FastLaunch(stream, per_thread)) {
    return;
  }
  if (Capturing(stream, per_thread)) return;  // recorded into a graph: runs (and is limited) later
  Device* dp = LockLimitedDevice();
  if (dp == nullptr) return;
  Device& d = *dp;
  StreamTrack* t = FindStream(d, stream, per_thread);
  // Held from here to AfterLaunch: while this launch waits below (lock released), another thread
  // that needs a track must not recycle this one.
  if (t != nullptr) ++t->in_launch;
  int64_t now = NowNs();
  // Poll the events at most every 500 us on the fast path: a launch-bound loop of tiny kernels
  // must not pay an event query per launch (the queue and budget checks below still run).
  if (now - d.last_poll_ns >= kPollIntervalNs || t == nullptr || t->count + 3 >= kMarkRing) {
    ProcessCompletions(d, now);
    d.last_poll_ns = now;
    // Everything recorded on the stream has run (bar a mark just recorded): the GPU is waiting on
    // this host thread, whose launch hooks then stretch what the events measure.
    if (t != nullptr)
      t->gpu_waited =
          t->count == 0 || (t->count == 1 && now - t->ring[t->head].host_ns < kContinuousNs);
  }
  const int64_t started = now;
  // Our turn on the GPU is over and another tenant waits: let our queued work finish (which
  // releases the lease to the waiter) before submitting more.
  if (d.peers.ShouldYield(now)) {
    // Hand over while our last batch still runs, so that the GPU never idles in between. Batches
    // that no event closed yet are closed first: nothing else would ever complete them.
    CloseOpenBatches(d, t, now);
    while (RecordedEndMarksAll(d) > 1) {
      pthread_mutex_unlock(&d.mu);
      SleepNs(kLeaseSleepStepNs);
      LockDevice(d);
      now = NowNs();
      ProcessCompletions(d, now);
    }
    d.peers.Release(now, now + DeviceOutstandingEst(d));
  }
  // Bound the unmeasured work queued on this stream: wait for the oldest marks to complete.
  const int64_t queue_wait_start = now;
  while (t != nullptr &&
         QueueFull(kParams, OutstandingEndMarks(*t), t->count, OutstandingEst(*t), false)) {
    pthread_mutex_unlock(&d.mu);
    SleepNs(kQueueSleepStepNs);
    LockDevice(d);
    now = NowNs();
    ProcessCompletions(d, now);
  }
  d.stats.queue_wait_ns += static_cast<uint64_t>(now - queue_wait_start);
  // Wait while the container's budget is in debt, in short steps so that completions keep
  // being charged and no lock is held while sleeping.
  for (bool throttled = false;;) {
    const int64_t tat = __atomic_load_n(&d.shared->tat_ns, __ATOMIC_RELAXED);
    if (!throttled && WaitNs(tat, now) <= 0) break;
    if (!throttled) {
      ++d.stats.budget_waits;
      // Close the batches still open, so that their events measure them and tell when our work
      // on the GPU is done (launches no event closes would keep us "busy" all through the wait).
      CloseOpenBatches(d, t, now);
    }
    throttled = true;
    const int64_t credit = ResumeCreditNs(d, now);  // first: it refreshes what BurstNs reads
    const int64_t wait = WaitNs(ResumeAtNs(tat, BurstNs(d), credit), now);
    if (wait <= 0) break;
    // Out of budget with nothing of ours on the GPU: hand our turn to a waiting tenant now, and
    // sleep in longer steps (there are no completions left to charge meanwhile).
    const bool idle = !RecordedWorkInFlight(d);
    if (idle) d.peers.Release(now, now + DeviceOutstandingEst(d));
    const int64_t step = idle ? kIdleBudgetSleepStepNs : kBudgetSleepStepNs;
    pthread_mutex_unlock(&d.mu);
    SleepNs(wait < step ? wait : step);
    LockDevice(d);
    now = NowNs();
    ProcessCompletions(d, now);
  }
  // Take our turn on the GPU (a lease that times out: a holder that dies cannot block us).
  const int64_t lease_wait_start = now;
  for (;;) {
    const uint32_t generation = d.peers.Generation();
    const int64_t queued = t != nullptr ? OutstandingEst(*t) : 0;
    if (d.peers.TryAcquire(now, now + queued + kLeaseSlackNs)) break;
    pthread_mutex_unlock(&d.mu);
    d.peers.WaitForRelease(generation, kLeaseWaitStepNs);
    LockDevice(d);
    now = NowNs();
    ProcessCompletions(d, now);
  }
  d.stats.lease_wait_ns += static_cast<uint64_t>(now - lease_wait_start);
  const int64_t overlap_until = d.peers.TakeOverlapUntil();
  // A turn handed to us after the previous holder's work had drained: the GPU idled from then
  // until this launch (our wake-up), and that hand-over gap is ours to pay, not the other
  // tenants'. A turn taken while their work still ran overlaps it instead (the start mark below).
  if (overlap_until != 0 && overlap_until < now && d.peers.handed_over()) {
    const int64_t gap = now - overlap_until;
    Charge(d, gap < kMaxHandoverGapNs ? gap : kMaxHandoverGapNs, 0, now);
  }
  if (now > started) {
    d.stats.throttled_ns += static_cast<uint64_t>(now - started);
    __atomic_fetch_add(&d.shared->throttled_ns, static_cast<uint64_t>(now - started),
                       __ATOMIC_RELAXED);
  }
  // A pause of the app opens a new interval (below), so that it is not charged, unless we held
  // the GPU all through it while another tenant waited for it: then it kept them off the GPU.
  const uint64_t turn = d.peers.turn();
  const bool continuous = t != nullptr && t->has_last_done &&
                          (now - t->last_launch_ns < kContinuousNs ||
                           (t->last_turn == turn && d.peers.Holding() && d.peers.AnyoneWaiting()));
  if (t != nullptr) t->last_turn = turn;
  if (t != nullptr && t->count == 0 && !continuous) {
    // Nothing of ours is queued on the stream and the app paused: open a new interval here so
    // that the pause is never charged. Launches that no mark closed are charged by estimate.
    // (A launch-bound loop, whose kernels finish before the next launch arrives, is one
    // continuous interval instead: its short gaps count, as they would for an unlimited run.)
    if (t->unrecorded > 0) {
      Charge(d, static_cast<int64_t>(t->unrecorded) * t->est_per_launch_ns, 0, now);
      t->unrecorded = 0;
    }
    if (RecordMark(d, *t, /*start=*/true, now) && overlap_until > now)
      t->ring[(t->head + t->count - 1) % kMarkRing].overlap_ns = overlap_until - now;
  }
  if (t != nullptr) t_armed = ArmedLaunch{&d, t, now};
  pthread_mutex_unlock(&d.mu);
}

// The application is about to wait for the GPU (a stream, context or event synchronisation):
// close its open batches, so that short batches between synchronisations (less than an event's
// worth of work) are measured instead of charged by an estimate that nothing would update.
void BeforeSync() {
  Device* dp = LockLimitedDevice();
  if (dp == nullptr) return;
  CloseOpenBatches(*dp, nullptr, NowNs());
  pthread_mutex_unlock(&dp->mu);
}

void AfterLaunch(CUresult result) {
  // Only launches that BeforeLaunch let through (not captured into a graph) are measured.
  const ArmedLaunch armed = t_armed;
  t_armed.device = nullptr;
  if (armed.device == nullptr) return;
  Device& d = *armed.device;
  LockDevice(d);
  StreamTrack* t = armed.track;
  --t->in_launch;
  if (result == CUDA_SUCCESS) {
    const int64_t now = armed.at_ns;
    ++d.stats.launches;
    if (t->unrecorded == 0) t->first_unrecorded_ns = now;
    t->last_launch_ns = now;
    ++t->unrecorded;
    if (ShouldRecordEnd(kParams, t->est_per_launch_ns, t->unrecorded, now - t->first_unrecorded_ns))
      RecordMark(d, *t, /*start=*/false, now);
    if (now - d.last_extend_ns >= kExtendIntervalNs) {
      d.peers.Extend(now + DeviceOutstandingEst(d) + kLeaseSlackNs);
      d.last_extend_ns = now;
    }
    OpenFastWindow(d, *t, now);
  }
  pthread_mutex_unlock(&d.mu);
}

// VGPU_SM_STATS=1: one line per limited device on stderr when the process exits, to see where a
// limited process's time went (measured and charged GPU time, waits, events).
constinit bool g_report_at_exit = false;
// VGPU_SM_STATS=2: the launch path also times itself (two clock reads per hook, ~80 ns): the time
// spent in the limiter's hooks (waits included) and in the driver's launch between them.
constinit bool g_self_timing = false;
// Every 256th launch of a thread is timed for g_hook_ns_est (-1: this launch is not).
__attribute__((tls_model("initial-exec"))) thread_local constinit uint32_t t_hook_tick = 0;
__attribute__((tls_model("initial-exec"))) thread_local constinit int64_t t_hook_sample_ns = -1;

void NoteHookSample(int64_t ns) {
  if (ns <= 0 || ns > kHookSampleMaxNs) return;
  const int64_t est = __atomic_load_n(&g_hook_ns_est, __ATOMIC_RELAXED);
  __atomic_store_n(&g_hook_ns_est, est <= 0 ? ns : est + (ns - est) / 8, __ATOMIC_RELAXED);
}
constinit uint64_t g_hook_ns = 0;
constinit uint64_t g_driver_launch_ns = 0;
constinit uint64_t g_timed_launches = 0;
constinit int64_t g_before_left_ns = 0;

double Ms(uint64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

__attribute__((destructor)) void ReportAtExit() {
  if (!g_report_at_exit) return;
  const uint64_t timed = __atomic_load_n(&g_timed_launches, __ATOMIC_RELAXED);
  const auto launches = static_cast<double>(timed > 0 ? timed : 1);
  const uint64_t hooks = __atomic_load_n(&g_hook_ns, __ATOMIC_RELAXED);
  const uint64_t driver = __atomic_load_n(&g_driver_launch_ns, __ATOMIC_RELAXED);
  for (int i = 0; i < kMaxDevices; ++i) {
    const Device& d = g_devices[i];
    if (__atomic_load_n(&d.state, __ATOMIC_ACQUIRE) != kStateLimited) continue;
    const uint64_t unfolded = __atomic_load_n(&d.fast.pending, __ATOMIC_RELAXED);
    const uint64_t launches_total = d.stats.launches + unfolded;
    const uint64_t fast_total = d.stats.fast_launches + unfolded;
    char line[384];
    int n = snprintf(
        line, sizeof(line),
        "[vgpu sm-limit] pid %d device %d limit %d%%: launches %llu, fast %llu, events %llu, "
        "measured %.1f ms, charged %.1f ms, throttled %.1f ms (queue %.1f ms, %llu "
        "budget waits), lease wait %.1f ms, hooks ~%lld ns per launch\n",
        static_cast<int>(getpid()), i, d.percent, static_cast<unsigned long long>(launches_total),
        static_cast<unsigned long long>(fast_total),
        static_cast<unsigned long long>(d.stats.events_recorded), Ms(d.stats.measured_ns),
        Ms(d.stats.charged_ns), Ms(d.stats.throttled_ns), Ms(d.stats.queue_wait_ns),
        static_cast<unsigned long long>(d.stats.budget_waits), Ms(d.stats.lease_wait_ns),
        static_cast<long long>(__atomic_load_n(&g_hook_ns_est, __ATOMIC_RELAXED)));
    WriteLine(line, n, sizeof(line));
    if (!g_self_timing) continue;
    // The hook time includes the waits; what is left is the limiter's own cost per launch.
    const uint64_t waits = d.stats.throttled_ns;
    n = snprintf(line, sizeof(line),
                 "[vgpu sm-limit] pid %d: limiter hooks %.0f ns per launch (waits excluded), "
                 "driver launch %.0f ns per launch\n",
                 static_cast<int>(getpid()),
                 static_cast<double>(hooks > waits ? hooks - waits : 0) / launches,
                 static_cast<double>(driver) / launches);
    WriteLine(line, n, sizeof(line));
  }
}

void ChildAfterFork() {
  // CUDA state does not survive fork; the child starts over (its own peer slot, new events).
  for (Device& d : g_devices) {
    pthread_mutex_init(&d.mu, nullptr);
    d.peers.ForgetAfterFork();
    memset(static_cast<void*>(d.streams), 0, sizeof(d.streams));
    d.fast_track = nullptr;
    memset(static_cast<void*>(&d.fast), 0, sizeof(d.fast));
    d.peers_tried = false;
    __atomic_store_n(&d.state, kStateUnknown, __ATOMIC_RELEASE);
  }
  pthread_mutex_init(&g_global_mu, nullptr);
  __atomic_store_n(&g_captures_active, 0, __ATOMIC_RELAXED);
  t_armed.device = nullptr;
  t_window.device = nullptr;
}

}  // namespace
}  // namespace vgpu::sm

extern "C" {

void vgpu_sm_init(const VgpuSmDriver* driver) {
  using namespace vgpu::sm;
  pthread_mutex_lock(&g_global_mu);
  if (!g_initialised && driver != nullptr) {
    g_driver = *driver;
    g_initialised = true;
    const char* report = GetEnv("VGPU_SM_STATS");
    g_report_at_exit = report != nullptr && *report != '\0' && *report != '0';
    g_self_timing = report != nullptr && strcmp(report, "2") == 0;
    Parsed<int32_t> alone_ms =
        ParseAloneBurstMs(GetEnv("VGPU_SM_ALONE_BURST_MS"), kAloneBurstDefaultMs);
    if (alone_ms.malformed) Warn("ignoring a malformed VGPU_SM_ALONE_BURST_MS (expected 0-1000)");
    g_alone_burst_ns = int64_t{alone_ms.value} * 1'000'000;
    Parsed<int32_t> shared_ms =
        ParseSharedCreditMs(GetEnv("VGPU_SM_SHARED_CREDIT_MS"), kSharedCreditDefaultMs);
    if (shared_ms.malformed) Warn("ignoring a malformed VGPU_SM_SHARED_CREDIT_MS (expected 1-200)");
    g_shared_credit_ns = int64_t{shared_ms.value} * 1'000'000;
    if (AnyDeviceLimited(GetEnv, kMaxDevices)) {
      pthread_atfork(nullptr, nullptr, ChildAfterFork);
      __atomic_store_n(&vgpu_sm_any_limited, 1, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&g_global_mu);
}

void vgpu_sm_set_state_resolver(VgpuSmStateResolver resolver) {
  using namespace vgpu::sm;
  pthread_mutex_lock(&g_global_mu);
  g_resolver = resolver;
  pthread_mutex_unlock(&g_global_mu);
}

void vgpu_sm_use_shared_state(VgpuSmDeviceShared* devices, int count) {
  using namespace vgpu::sm;
  pthread_mutex_lock(&g_global_mu);
  g_region_devices = devices;
  g_region_count = count < kMaxDevices ? count : kMaxDevices;
  pthread_mutex_unlock(&g_global_mu);
}

void vgpu_sm_before_launch_slow(CUstream stream, int per_thread_stream) {
  using namespace vgpu::sm;
  if (!g_self_timing && (++t_hook_tick & kHookSampleMask) != 0) {
    BeforeLaunch(stream, per_thread_stream);
    return;
  }
  const int64_t start = NowNs();
  BeforeLaunch(stream, per_thread_stream);
  const int64_t end = NowNs();
  t_hook_sample_ns = end - start;
  if (!g_self_timing) return;
  __atomic_fetch_add(&g_hook_ns, static_cast<uint64_t>(end - start), __ATOMIC_RELAXED);
  __atomic_store_n(&g_before_left_ns, end, __ATOMIC_RELAXED);
}

void vgpu_sm_after_launch_slow(CUstream stream, int per_thread_stream, CUresult launch_result) {
  using namespace vgpu::sm;
  (void)stream;  // the launch's stream is known from its BeforeLaunch (t_armed)
  (void)per_thread_stream;
  if (t_hook_sample_ns < 0) {
    AfterLaunch(launch_result);
    return;
  }
  const int64_t start = NowNs();
  AfterLaunch(launch_result);
  const int64_t end = NowNs();
  NoteHookSample(t_hook_sample_ns + (end - start));
  t_hook_sample_ns = -1;
  if (!g_self_timing) return;
  const int64_t before_left = __atomic_load_n(&g_before_left_ns, __ATOMIC_RELAXED);
  __atomic_fetch_add(&g_hook_ns, static_cast<uint64_t>(end - start), __ATOMIC_RELAXED);
  if (before_left > 0 && start >= before_left)
    __atomic_fetch_add(&g_driver_launch_ns, static_cast<uint64_t>(start - before_left),
                       __ATOMIC_RELAXED);
  __atomic_fetch_add(&g_timed_launches, 1, __ATOMIC_RELAXED);
}

void vgpu_sm_before_sync_slow(void) {
  vgpu::sm::BeforeSync();
}

void vgpu_sm_capture_begun(void) {
  __atomic_fetch_add(&vgpu::sm::g_captures_active, 1, __ATOMIC_RELAXED);
}

void vgpu_sm_capture_ended(void) {
  int active = __atomic_load_n(&vgpu::sm::g_captures_active, __ATOMIC_RELAXED);
  while (active > 0 &&
         !__atomic_compare_exchange_n(&vgpu::sm::g_captures_active, &active, active - 1, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

int vgpu_sm_get_stats(int device, VgpuSmStats* out) {
  using namespace vgpu::sm;
  if (out == nullptr || device < 0 || device >= kMaxDevices) return -1;
  Device& d = g_devices[device];
  LockDevice(d);
  *out = d.stats;
  pthread_mutex_unlock(&d.mu);
  return 0;
}

}  // extern "C"
