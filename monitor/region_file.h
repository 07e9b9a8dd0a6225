#pragma once

// One container's region file, mapped read-write (MAP_SHARED) by the monitor. Everything read is
// an atomic load (the processes of the container change the counters at any time, and the file's
// content is theirs: nothing read is trusted beyond its bounds). The monitor writes only two
// things: `sm_sharing` of a device record and `host_pid` / `host_start_time` of a process slot
// (vgpu/region_layout.h).

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/monitor/host_process.h"
#include "core/monitor/tick_plan.h"
#include "monitor/unique_fd.h"
#include "vgpu/region_layout.h"

namespace vgpu::monitor {

struct RegionDevice {
  std::string uuid;             // up to its NUL
  bool uuid_terminated = true;  // false: the record's UUID buffer held no NUL
  uint64_t mem_limit = 0;
  uint64_t mem_physical = 0;
  uint64_t mem_used = 0;  // the record's total over the live slots
  uint32_t sm_limit = 0;
  uint32_t flags = 0;  // VGPU_DEVICE_FLAG_*
  uint32_t sm_policy = 0;
  int32_t sm_sharing = 0;
  uint64_t sm_busy_ns = 0;
};

// Whether device records read from a region make sense (core/monitor/region_header.h
// ValidateDeviceRecords): checked again on the copies a tick uses, as the container may write the
// records between a check and the reads.
Status ValidateDevices(std::span<const RegionDevice> devices);

struct RegionSlot {
  int32_t pid = 0;
  uint64_t start_time = 0;  // 0 until the slot is ACTIVE
  int32_t host_pid = 0;
  uint64_t host_start_time = 0;
  std::array<uint64_t, VGPU_REGION_MAX_DEVICES> mem_used{};
  std::array<uint64_t, VGPU_REGION_MAX_DEVICES> mem_overhead{};
  std::array<uint64_t, VGPU_REGION_MAX_DEVICES> last_kernel_ns{};
};

class RegionFile {
 public:
  // Opens `name` in the directory `dir_fd` without following a symlink and without opening
  // anything but a regular file with one name (a FIFO, a device node, a directory is looked at
  // through an O_PATH descriptor only), checks that it holds a region of this layout
  // (ValidateRegionHeader, ValidateDevices: one message per problem) and maps it. NotFound: the
  // name is gone; Unavailable: the file may become a region (being created) or could not be read;
  // InvalidArgument: it is no usable region.
  static Result<std::unique_ptr<RegionFile>> Open(int dir_fd, const std::string& name);
  ~RegionFile();
  RegionFile(const RegionFile&) = delete;
  RegionFile& operator=(const RegionFile&) = delete;

  // The file as /proc/<pid>/maps names it.
  const FileId& id() const { return id_; }
  // Whether `name` in `dir_fd` is still this file, of a region's size, with a valid header. A file
  // truncated between this check and the tick's reads reads as zeros there (mapping_guard.h).
  Status Check(int dir_fd, const std::string& name) const;
  // The same without looking at the name (its directory did not change): size, names, header and
  // device records.
  Status CheckContent() const;

  uint32_t DeviceCount() const;  // records [0, DeviceCount()) are valid
  RegionDevice Device(uint32_t index) const;
  // A slot's figures, or nullopt-like pid 0 for a free slot or one being claimed.
  RegionSlot Slot(int index) const;
  // A slot's owner: pid 0 when free; start_time 0 while it is being claimed. Reads two fields.
  SlotIdentity Identity(int index) const;
  // The slots whose pid is not 0, by ascending index, read with pread(2) so that the pages of free
  // slots stay out of the monitor's memory (a region is 680 KiB, mostly free slots). A pid read
  // this way may be torn or stale: the caller confirms each with Identity().
  std::vector<int> OccupiedSlots() const;

  void WriteSharing(uint32_t device, int32_t flag);
  // Writes the host PID of a slot and, last with release order, the start time it was matched at:
  // libvgpu (vgpu_region_nvml_pid) trusts host_pid only while host_start_time equals the slot's
  // start_time, so a slot re-claimed meanwhile never gets the old owner's PID.
  void WriteHostPid(int slot, int32_t host_pid, uint64_t start_time);

  // The device record's sm_busy_ns at the previous tick (for the utilization fallback).
  struct BusySample {
    uint64_t busy_ns = 0;
    int64_t at_mono_ns = 0;
  };
  std::array<BusySample, VGPU_REGION_MAX_DEVICES>& busy_samples() { return busy_samples_; }

  // What the engine found in the slots at the previous tick (core/monitor/tick_plan.h).
  struct SlotMemo {
    bool swept = false;              // a full sweep ran since the file was opened
    int ticks_to_sweep = 0;          // ticks left until the next periodic full sweep
    std::vector<SeenSlot> occupied;  // by ascending index
  };
  SlotMemo& slot_memo() { return slot_memo_; }

 private:
  RegionFile(UniqueFd fd, vgpu_region* region, FileId id, dev_t dev, ino_t ino);

  UniqueFd fd_;
  vgpu_region* region_;
  FileId id_;
  dev_t dev_;
  ino_t ino_;
  std::array<BusySample, VGPU_REGION_MAX_DEVICES> busy_samples_{};
  SlotMemo slot_memo_;
};

}  // namespace vgpu::monitor
