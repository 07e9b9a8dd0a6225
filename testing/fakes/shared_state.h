#pragma once

// Cross-process state of the simulated GPUs: a file under VGPU_FAKE_STATE_DIR, mmap'ed by every
// process that uses the fake CUDA or NVML library. It holds what a real driver knows globally:
// per-device used memory and busy clock, per-(process, device) used memory and GPU time, and a
// ring of recent kernel intervals per device (for utilization queries).
//
// Locking: flock() on the file (released by the kernel when a process dies, even by SIGKILL)
// plus an in-process mutex (flock does not exclude threads sharing one open file).
// Dead processes (gone, zombie, or PID reused: start time differs) are reclaimed by the next
// caller that charges memory or reads usage, as a real driver frees a dead process's memory.

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fake_config.h"

namespace vgpu::fake {

inline constexpr int kMaxProcesses = 128;
inline constexpr int kIntervalRing = 8192;  // per GPU; back-to-back kernels of a process merge

struct KernelInterval {
  int32_t pid;
  int32_t unused;
  int64_t start_ns;
  int64_t end_ns;
};

inline constexpr int kEventRing = 16;

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
  int64_t free_at_ns;  // end of the last kernel queued on the device (the busy clock)
  uint32_t ring_next;
  uint32_t ring_count;
  KernelInterval ring[kIntervalRing];
};

struct ProcessSlot {
  int32_t pid;  // 0 = free
  int32_t unused;
  uint64_t start_time;  // /proc/<pid>/stat field 22, detects PID reuse
  uint64_t used_bytes[kMaxDevices];
  uint64_t gpu_ns[kMaxDevices];
};

struct SharedLayout {
  uint64_t magic;
  uint32_t version;
  uint32_t size;
  DeviceShared devices[kMaxDevices];
  ProcessSlot processes[kMaxProcesses];
};

struct ProcessUsage {
  int pid;
  uint64_t used_bytes;
};

struct ProcessBusy {
  int pid;
  int64_t busy_ns;
};

struct KernelTimes {
  int64_t start_ns;
  int64_t end_ns;
};

// Start time of a process (clock ticks since boot), 0 when it does not exist or is a zombie.
uint64_t ProcessStartTime(int pid);

class SharedState {
 public:
  // Opens (creating if needed) <dir>/state-v1. Returns nullptr and sets `error` on failure.
  static SharedState* Open(const std::string& dir, std::string* error);
  explicit SharedState(std::string path) : path_(std::move(path)) {}

  // Adds `bytes` to device `dev` for this process unless that would exceed `total`.
  bool TryCharge(int dev, uint64_t bytes, uint64_t total);
  void Release(int dev, uint64_t bytes);
  uint64_t DeviceUsed(int dev);
  uint64_t ProcessUsed(int pid, int dev);
  std::vector<ProcessUsage> Processes(int dev);

  // Queues a kernel of `duration_ns` on device `dev`: start = max(now, device busy clock,
  // not_before_ns); the busy clock becomes its end. Records the interval for utilization.
  KernelTimes ScheduleKernel(int dev, int64_t not_before_ns, int64_t duration_ns);
  // Time each process spent on device `dev` within [from_ns, to_ns), and the device total.
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
  int64_t DeviceFreeAt(int dev);

 private:
  class Guard;
  bool Map(std::string* error);
  void EnsureMappedForThisProcess();
  void ReclaimDead();
  ProcessSlot* OwnSlot();

  std::mutex mu_;
  std::string path_;
  int fd_ = -1;
  int owner_pid_ = 0;
  SharedLayout* layout_ = nullptr;
};

}  // namespace vgpu::fake
