#include "shared_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "sim_clock.h"

namespace vgpu::fake {
namespace {

constexpr uint64_t kMagic = 0x5447504b46555047ULL;  // "GPUFKPGT"
constexpr uint32_t kVersion = 3;
// How often an advancing caller checks that the owners of a GPU's contexts are alive: a dead
// process's queue must not hold the GPU, but reading /proc at every launch would cost too much.
constexpr int64_t kReapCheckNs = 2'000'000;

bool MakeDirs(const std::string& dir) {
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      partial = dir.substr(0, i);
      if (mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

std::string ErrorText(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);  // GNU strerror_r: returns the message
}

}  // namespace

uint64_t ProcessStartTime(int pid) {
  char path[64];
  (void)std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  ++p;
  // Fields after the command name: 3 = state, ..., 22 = starttime.
  char state = 0;
  unsigned long long start = 0;
  if (std::sscanf(
          p, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
          &state, &start) != 2) {
    return 0;
  }
  if (state == 'Z' || state == 'X' || state == 'x') return 0;  // exited: its memory is freed
  return start == 0 ? 1 : start;
}

class SharedState::Guard {
 public:
  explicit Guard(SharedState& s) : s_(s), lock_(s.mu_) {
    s_.EnsureMappedForThisProcess();
    while (flock(s_.fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~Guard() { flock(s_.fd_, LOCK_UN); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  SharedState& s_;
  std::lock_guard<std::mutex> lock_;
};

SharedState* SharedState::Open(const std::string& dir, const FakeConfig& config,
                               std::string* error) {
  // One mapping per state directory for the life of the process, deliberately never destroyed:
  // other threads (or other libraries' exit handlers) may still call in while the process exits.
  static std::mutex registry_mu;
  // NOLINTNEXTLINE(cppcoreguidelines-owning-memory)
  static auto* registry = new std::map<std::string, std::unique_ptr<SharedState>>();
  std::lock_guard<std::mutex> lock(registry_mu);
  auto it = registry->find(dir);
  if (it != registry->end()) return it->second.get();
  if (!MakeDirs(dir)) {
    if (error != nullptr)
      *error = "cannot create VGPU_FAKE_STATE_DIR " + dir + ": " + ErrorText(errno);
    return nullptr;
  }
  auto state = std::make_unique<SharedState>(dir + "/state-v2");
  if (!state->Map(config, error)) return nullptr;
  state->exit_drain_ns_ = config.exit_drain_ns;
  SharedState* raw = state.get();
  (*registry)[dir] = std::move(state);
  return raw;
}

bool SharedState::Map(const FakeConfig& config, std::string* error) {
  fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    if (error != nullptr)
      *error = "cannot open fake GPU state file " + path_ + ": " + ErrorText(errno);
    return false;
  }
  owner_pid_ = getpid();
  while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
  struct stat st {};
  fstat(fd_, &st);
  bool fresh = static_cast<size_t>(st.st_size) != sizeof(SharedLayout);
  // Truncating to 0 first zeroes the file without touching its pages: it stays sparse.
  if (fresh && (ftruncate(fd_, 0) != 0 || ftruncate(fd_, sizeof(SharedLayout)) != 0)) {
    if (error != nullptr)
      *error = "cannot size fake GPU state file " + path_ + ": " + ErrorText(errno);
    flock(fd_, LOCK_UN);
    return false;
  }
  void* p = mmap(nullptr, sizeof(SharedLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    if (error != nullptr)
      *error = "cannot map fake GPU state file " + path_ + ": " + ErrorText(errno);
    flock(fd_, LOCK_UN);
    return false;
  }
  layout_ = static_cast<SharedLayout*>(p);
  if (layout_->magic != kMagic || layout_->version != kVersion ||
      layout_->size != sizeof(SharedLayout)) {
    if (!fresh) std::memset(static_cast<void*>(layout_), 0, sizeof(SharedLayout));
    layout_->magic = kMagic;
    layout_->version = kVersion;
    layout_->size = sizeof(SharedLayout);
    layout_->timeslice_ns = config.timeslice_ns;
    layout_->switch_ns = config.switch_ns;
    for (auto& dev : layout_->devices) {
      dev.sched.current = -1;
      dev.sched.last = -1;
    }
  }
  flock(fd_, LOCK_UN);
  return true;
}

void SharedState::EnsureMappedForThisProcess() {
  // After fork() the child shares the parent's open file description, and flock() would not
  // exclude the two; give the child its own.
  if (owner_pid_ == getpid()) return;
  int fd = open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    close(fd_);
    fd_ = fd;
  }
  owner_pid_ = getpid();
}

void SharedState::ReclaimDead() {
  for (auto& slot : layout_->processes) {
    if (slot.pid == 0) continue;
    if (ProcessStartTime(slot.pid) == slot.start_time) continue;
    // A real driver frees a process's memory some time after the process is gone (teardown of
    // its contexts): until then the dead process is still listed, with its memory.
    if (exit_drain_ns_ > 0) {
      const auto now_ms = static_cast<uint32_t>(NowNs() / 1'000'000) | 1u;
      if (slot.dead_seen_ms == 0) slot.dead_seen_ms = now_ms;
      if (static_cast<int64_t>(now_ms - slot.dead_seen_ms) * 1'000'000 < exit_drain_ns_) continue;
    }
    for (int d = 0; d < kMaxDevices; ++d) {
      auto& dev = layout_->devices[d];
      dev.used_bytes -= std::min(dev.used_bytes, slot.used_bytes[d]);
    }
    for (int c = 0; c < kMaxContexts; ++c) {
      const auto& ctx = layout_->contexts[c];
      if (ctx.uid != 0 && ctx.pid == slot.pid && ctx.start_time == slot.start_time) {
        // Simulated up to now with the dead process still queued, then its queue is dropped.
        AdvanceGpu(*layout_, ctx.device, NowNs());
        DropContextSlot(*layout_, c);
      }
    }
    std::memset(&slot, 0, sizeof slot);
  }
}

void SharedState::Advance(int dev, int64_t now_ns) {
  auto& g = layout_->devices[dev].sched;
  if (now_ns - g.reap_check_ns >= kReapCheckNs) {
    g.reap_check_ns = now_ns;
    for (int c = 0; c < kMaxContexts; ++c) {
      const auto& ctx = layout_->contexts[c];
      if (ctx.uid != 0 && ctx.device == dev && ProcessStartTime(ctx.pid) != ctx.start_time) {
        AdvanceGpu(*layout_, dev, now_ns);
        DropContextSlot(*layout_, c);
      }
    }
  }
  AdvanceGpu(*layout_, dev, now_ns);
}

ContextSlot* SharedState::Find(ContextRef ctx) {
  if (ctx.slot < 0 || ctx.slot >= kMaxContexts) return nullptr;
  ContextSlot& c = layout_->contexts[ctx.slot];
  return c.uid == ctx.uid && ctx.uid != 0 ? &c : nullptr;
}

ProcessSlot* SharedState::OwnSlot() {
  const int pid = getpid();
  static thread_local int cached_pid = 0;
  static thread_local uint64_t cached_start = 0;
  if (cached_pid != pid) {
    cached_pid = pid;
    cached_start = ProcessStartTime(pid);
  }
  ProcessSlot* free_slot = nullptr;
  for (auto& slot : layout_->processes) {
    if (slot.pid == pid && slot.start_time == cached_start) return &slot;
    if (slot.pid == 0 && free_slot == nullptr) free_slot = &slot;
  }
  if (free_slot == nullptr) {
    ReclaimDead();
    for (auto& slot : layout_->processes) {
      if (slot.pid == 0) {
        free_slot = &slot;
        break;
      }
    }
  }
  if (free_slot != nullptr) {
    std::memset(free_slot, 0, sizeof *free_slot);
    free_slot->pid = pid;
    free_slot->start_time = cached_start;
  }
  return free_slot;
}

bool SharedState::TryCharge(int dev, uint64_t bytes, uint64_t total) {
  if (dev < 0 || dev >= kMaxDevices) return false;
  Guard g(*this);
  auto& d = layout_->devices[dev];
  // Memory of dead processes matters only when it stands in the way: looking for them reads
  // /proc once per live process, too slow to do on every allocation of hundreds of processes.
  if (d.used_bytes > total || bytes > total - d.used_bytes) {
    ReclaimDead();
    if (d.used_bytes > total || bytes > total - d.used_bytes) return false;
  }
  ProcessSlot* slot = OwnSlot();
  if (slot == nullptr) return false;
  d.used_bytes += bytes;
  slot->used_bytes[dev] += bytes;
  return true;
}

void SharedState::Release(int dev, uint64_t bytes) {
  if (dev < 0 || dev >= kMaxDevices) return;
  Guard g(*this);
  ProcessSlot* slot = OwnSlot();
  if (slot == nullptr) return;
  bytes = std::min(bytes, slot->used_bytes[dev]);
  slot->used_bytes[dev] -= bytes;
  auto& d = layout_->devices[dev];
  d.used_bytes -= std::min(d.used_bytes, bytes);
}

uint64_t SharedState::DeviceUsed(int dev) {
  if (dev < 0 || dev >= kMaxDevices) return 0;
  Guard g(*this);
  ReclaimDead();
  return layout_->devices[dev].used_bytes;
}

uint64_t SharedState::ProcessUsed(int pid, int dev) {
  if (dev < 0 || dev >= kMaxDevices) return 0;
  Guard g(*this);
  ReclaimDead();
  for (const auto& slot : layout_->processes) {
    if (slot.pid == pid) return slot.used_bytes[dev];
  }
  return 0;
}

std::vector<ProcessUsage> SharedState::Processes(int dev) {
  std::vector<ProcessUsage> out;
  if (dev < 0 || dev >= kMaxDevices) return out;
  Guard g(*this);
  ReclaimDead();
  Advance(dev, NowNs());
  for (const auto& slot : layout_->processes) {
    if (slot.pid != 0 && slot.used_bytes[dev] > 0) out.push_back({slot.pid, slot.used_bytes[dev]});
  }
  return out;
}

std::optional<ContextRef> SharedState::OpenContext(int gpu, int ordinal, uint32_t context_id) {
  if (gpu < 0 || gpu >= kMaxDevices) return std::nullopt;
  Guard g(*this);
  Advance(gpu, NowNs());
  ProcessSlot* own = OwnSlot();
  if (own == nullptr) return std::nullopt;
  ContextOwner owner;
  owner.pid = own->pid;
  owner.start_time = own->start_time;
  owner.process = static_cast<int>(own - layout_->processes);
  owner.ordinal = ordinal;
  owner.context_id = context_id;
  int slot = OpenContextSlot(*layout_, gpu, owner);
  if (slot < 0) {  // perhaps held by dead processes
    ReclaimDead();
    slot = OpenContextSlot(*layout_, gpu, owner);
  }
  if (slot < 0) return std::nullopt;
  return ContextRef{slot, layout_->contexts[slot].uid};
}

void SharedState::CloseContext(ContextRef ctx) {
  Guard g(*this);
  ContextSlot* c = Find(ctx);
  if (c == nullptr) return;
  Advance(c->device, NowNs());
  if (Find(ctx) != nullptr) CloseContextSlot(*layout_, ctx.slot);
}

Submission SharedState::Submit(ContextRef ctx, const KernelLaunch& kernel) {
  Submission out;
  Guard g(*this);
  ContextSlot* c = Find(ctx);
  if (c == nullptr) return out;
  Advance(c->device, NowNs());
  if (Find(ctx) == nullptr) return out;
  out.status = SubmitKernel(*layout_, ctx.slot, kernel, &out.evicted) ? Submission::Status::kQueued
                                                                      : Submission::Status::kFull;
  out.seq = c->submitted;
  return out;
}

Progress SharedState::ProgressOf(ContextRef ctx, uint64_t seq) {
  Progress out;
  Guard g(*this);
  out.now_ns = NowNs();
  ContextSlot* c = Find(ctx);
  if (c != nullptr) Advance(c->device, out.now_ns);
  if (Find(ctx) == nullptr) {
    out.done = true;
    return out;
  }
  const KernelProgress p = vgpu::fake::ProgressOf(*layout_, ctx.slot, seq);
  out.done = p.done;
  out.end_ns = p.end_ns;
  out.earliest_end_ns = p.earliest_end_ns;
  return out;
}

unsigned SharedState::TakeRecords(int gpus, VgpuFakeKernelCursor* cursor, VgpuFakeKernelRecord* out,
                                  unsigned capacity) {
  gpus = std::clamp(gpus, 0, std::min(kMaxDevices, VGPU_FAKE_RECORD_GPUS));
  Guard g(*this);
  const int64_t now = NowNs();
  const ProcessSlot* own = OwnSlot();
  const int pid = getpid();
  unsigned n = 0;
  for (int dev = 0; dev < gpus; ++dev) {
    Advance(dev, now);
    const auto& d = layout_->devices[dev];
    const uint64_t done = own != nullptr ? own->kernels_done[dev] : 0;
    if (cursor->started == 0) {
      cursor->next_seq[dev] = d.record_seq + 1;
      cursor->seen[dev] = done;
      continue;
    }
    const uint64_t oldest = d.record_seq >= kRecordRing ? d.record_seq - kRecordRing + 1 : 1;
    uint64_t seq = std::max<uint64_t>(cursor->next_seq[dev], oldest);
    bool stopped = false;
    for (; seq <= d.record_seq; ++seq) {
      const KernelRecord& r = d.records[(seq - 1) % kRecordRing];
      if (r.pid != pid) continue;
      if (n == capacity) {
        stopped = true;
        break;
      }
      // Own kernels between the last one seen and this one were overwritten before taken.
      if (r.process_done > cursor->seen[dev] + 1)
        cursor->lost += r.process_done - cursor->seen[dev] - 1;
      cursor->seen[dev] = std::max<uint64_t>(cursor->seen[dev], r.process_done);
      VgpuFakeKernelRecord& o = out[n++];
      o = VgpuFakeKernelRecord{};
      o.start_ns = static_cast<unsigned long long>(r.start_ns);
      o.end_ns = static_cast<unsigned long long>(r.end_ns);
      o.service_ns = static_cast<unsigned long long>(r.service_ns);
      o.context_id = r.context_id;
      o.stream_id = r.stream_id;
      o.correlation_id = r.correlation_id;
      o.device = r.ordinal;
      std::memcpy(o.grid, r.grid, sizeof o.grid);
      std::memcpy(o.block, r.block, sizeof o.block);
    }
    cursor->next_seq[dev] = seq;
    if (!stopped && done > cursor->seen[dev]) {
      cursor->lost += done - cursor->seen[dev];
      cursor->seen[dev] = done;
    }
  }
  cursor->started = 1;
  return n;
}

std::vector<ProcessBusy> SharedState::BusyByProcess(int dev, int64_t from_ns, int64_t to_ns,
                                                    int64_t* device_busy_ns) {
  std::vector<ProcessBusy> out;
  int64_t total = 0;
  if (dev >= 0 && dev < kMaxDevices && to_ns > from_ns) {
    Guard g(*this);
    Advance(dev, NowNs());
    const auto& d = layout_->devices[dev];
    // Newest first; periods are appended in time order, so older ones cannot reach the window.
    for (uint32_t i = 0; i < d.service_count; ++i) {
      const auto& iv = d.service[(d.service_next + kServiceRing - 1 - i) % kServiceRing];
      if (iv.end_ns <= from_ns) break;
      const int64_t b = std::max(iv.start_ns, from_ns);
      const int64_t e = std::min(iv.end_ns, to_ns);
      if (e <= b) continue;
      total += e - b;
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const ProcessBusy& p) { return p.pid == iv.pid; });
      if (it == out.end()) {
        out.push_back({iv.pid, e - b});
      } else {
        it->busy_ns += e - b;
      }
    }
  }
  if (device_busy_ns != nullptr) *device_busy_ns = total;
  return out;
}

uint64_t SharedState::ProcessGpuNs(int pid, int dev) {
  if (dev < 0 || dev >= kMaxDevices) return 0;
  Guard g(*this);
  Advance(dev, NowNs());
  for (const auto& slot : layout_->processes) {
    if (slot.pid == pid) return slot.gpu_ns[dev];
  }
  return 0;
}

void SharedState::PostEvent(int dev, uint64_t type, uint64_t data) {
  if (dev < 0 || dev >= kMaxDevices) return;
  Guard g(*this);
  auto& d = layout_->devices[dev];
  const uint64_t seq = ++d.event_seq;
  d.events[seq % kEventRing] = DeviceEvent{seq, type, data};
}

bool SharedState::NextEvent(int dev, uint64_t after, DeviceEvent* out) {
  if (dev < 0 || dev >= kMaxDevices) return false;
  Guard g(*this);
  const auto& d = layout_->devices[dev];
  if (d.event_seq <= after) return false;
  // Oldest retained event newer than `after`.
  const uint64_t oldest = d.event_seq >= kEventRing ? d.event_seq - kEventRing + 1 : 1;
  const uint64_t seq = std::max(after + 1, oldest);
  *out = d.events[seq % kEventRing];
  return out->seq == seq;
}

uint64_t SharedState::LastEventSeq(int dev) {
  if (dev < 0 || dev >= kMaxDevices) return 0;
  Guard g(*this);
  return layout_->devices[dev].event_seq;
}

void SharedState::SetLost(int dev, bool lost) {
  if (dev < 0 || dev >= kMaxDevices) return;
  Guard g(*this);
  layout_->devices[dev].lost = lost ? 1 : 0;
}

bool SharedState::IsLost(int dev) {
  if (dev < 0 || dev >= kMaxDevices) return false;
  Guard g(*this);
  return layout_->devices[dev].lost != 0;
}

}  // namespace vgpu::fake
