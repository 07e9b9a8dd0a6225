#pragma once

// Cross-process state of the simulated GPUs: a file under VGPU_FAKE_STATE_DIR, mmap'ed by every
// process that uses the fake CUDA or NVML library (layout: shared_layout.h). It holds what a real
// driver knows globally: per-device used memory, every context's queue of kernels and the GPU's
// timeline (gpu_scheduler.h), per-(process, device) used memory and GPU time, the periods each
// process was served (utilization queries) and the completed kernels (the records export).
//
// Locking: flock() on the file (released by the kernel when a process dies, even by SIGKILL)
// plus an in-process mutex (flock does not exclude threads sharing one open file).
// Dead processes (gone, zombie, or PID reused: start time differs) are reclaimed by the next
// caller that charges memory or reads usage, as a real driver frees a dead process's memory; their
// queued kernels are dropped by the next caller that advances the GPU (checked every 2 ms).

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fake_config.h"
#include "fake_kernel_records.h"
#include "gpu_scheduler.h"
#include "shared_layout.h"

namespace vgpu::fake {

struct ProcessUsage {
  int pid;
  uint64_t used_bytes;
};

struct ProcessBusy {
  int pid;
  int64_t busy_ns;
};

// A context's scheduling slot; the uid tells a reused slot from the one the context opened.
struct ContextRef {
  int slot = -1;
  uint64_t uid = 0;
};

struct Submission {
  enum class Status { kQueued, kFull, kNoContext } status = Status::kNoContext;
  uint64_t seq = 0;         // when queued: the kernel's seq within its context
  PendingKernel evicted{};  // completed kernel whose queue entry it took (seq 0: none)
};

struct Progress {
  bool done = false;
  int64_t end_ns = -1;          // when done: the kernel's end, -1 when no longer known
  int64_t earliest_end_ns = 0;  // when not done: lower bound of its end
  int64_t now_ns = 0;           // the time the GPU was advanced to
};

// Start time of a process (clock ticks since boot), 0 when it does not exist or is a zombie.
uint64_t ProcessStartTime(int pid);

class SharedState {
 public:
  // Opens (creating if needed) <dir>/state-v2. The creator fixes the time slice and switch cost
  // (from `config`) for every process. Returns nullptr and sets `error` on failure.
  static SharedState* Open(const std::string& dir, const FakeConfig& config, std::string* error);
  explicit SharedState(std::string path) : path_(std::move(path)) {}

  // Adds `bytes` to device `dev` for this process unless that would exceed `total`.
  bool TryCharge(int dev, uint64_t bytes, uint64_t total);
  void Release(int dev, uint64_t bytes);
  uint64_t DeviceUsed(int dev);
  uint64_t ProcessUsed(int pid, int dev);
  std::vector<ProcessUsage> Processes(int dev);

  // Kernels (gpu_scheduler.h). Every call below first advances the GPU's timeline to now.
  // A context of this process on physical GPU `gpu`; nullopt when all slots are taken.
  std::optional<ContextRef> OpenContext(int gpu, int ordinal, uint32_t context_id);
  // Its queued kernels still run; the slot is freed when they have.
  void CloseContext(ContextRef ctx);
  Submission Submit(ContextRef ctx, const KernelLaunch& kernel);
  // Kernel `seq` of the context (0: none, done). A context no longer open counts as done.
  Progress ProgressOf(ContextRef ctx, uint64_t seq);
  // The records export (fake_kernel_records.h) over the first `gpus` GPUs.
  unsigned TakeRecords(int gpus, VgpuFakeKernelCursor* cursor, VgpuFakeKernelRecord* out,
                       unsigned capacity);
  // Service time of each process on device `dev` within [from_ns, to_ns), and the device total.
  std::vector<ProcessBusy> BusyByProcess(int dev, int64_t from_ns, int64_t to_ns,
                                         int64_t* device_busy_ns);
  uint64_t ProcessGpuNs(int pid, int dev);

  // Device events (NVML event sets): Post appends one; Next returns the oldest event with a
  // sequence number above `after` (events older than the ring are lost, as when a real
  // listener falls behind). LastEventSeq is where a new listener starts.
  void PostEvent(int dev, uint64_t type, uint64_t data);
  bool NextEvent(int dev, uint64_t after, DeviceEvent* out);
  uint64_t LastEventSeq(int dev);

  void SetLost(int dev, bool lost);
  bool IsLost(int dev);

 private:
  class Guard;
  bool Map(const FakeConfig& config, std::string* error);
  void Advance(int dev, int64_t now_ns);
  ContextSlot* Find(ContextRef ctx);
  void EnsureMappedForThisProcess();
  void ReclaimDead();
  ProcessSlot* OwnSlot();

  std::mutex mu_;
  std::string path_;
  int fd_ = -1;
  int owner_pid_ = 0;
  SharedLayout* layout_ = nullptr;
  int64_t exit_drain_ns_ = 0;  // VGPU_FAKE_EXIT_DRAIN_MS: how long a dead process's memory stays
};

}  // namespace vgpu::fake
