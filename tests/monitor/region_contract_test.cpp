// The region contract between libvgpu (C, the container's side) and the node monitor (C++): the
// region file is written by libvgpu's own code and read back by the monitor's reader, field by
// field, and the other way round for the fields the monitor writes. Both sides compile the same
// layout header (vgpu/region_layout.h), so a field one side stops writing, writes elsewhere or
// reads from the wrong place only shows when the real code of both runs on one file: issue 45
// found sm_policy read by the monitor and shown by `vgpu top`, but never written by libvgpu.
//
// Fields covered, and by whom they are written and read:
//   header: magic, version, header_size, file_size, max_devices, max_procs (libvgpu lays the file
//     out, the monitor's RegionFile::Open validates them: WriteThenRead opens the file),
//     device_count (DeviceCount), flags' VGPU_REGION_FLAG_UNUSABLE (libvgpu marks a corrupt
//     region, the monitor refuses it: UnusableMarkIsRefused).
//   device record: uuid, mem_limit, mem_physical, mem_used, sm_limit, flags
//     (VGPU_DEVICE_FLAG_NO_MEMORY), sm_policy (region.c, vgpu_region_register_device and the
//     admission calls), sm_busy_ns (the SM limiter's Charge, bound to the record by BindRecord);
//     sm_sharing the other way: written by the monitor (WriteSharing), read by the limiter.
//   process slot: pid, status, start_time (vgpu_region_claim_slot), mem_used[], mem_overhead[]
//     (vgpu_region_reserve, vgpu_region_set_overhead), sm_last_kernel_ns[] (Charge); host_pid and
//     host_start_time the other way: written by the monitor (WriteHostPid), read by libvgpu
//     (vgpu_region_nvml_pid).
// Not covered here (one side only, no contract): the device lock, sm_tat_ns, sm_charged_ns,
// sm_throttled_ns, context_bytes, a slot's priority and sm_gpu_time_ns, created_unix_s and the
// header's VGPU_REGION_FLAG_OOM_KILLER bit (neither writer nor reader), the reserved words.
// LayoutIsPinned pins every field's place, so that a change of the layout comes with a new
// VGPU_REGION_VERSION.

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "limiter.h"  // libvgpu/src/sm: the SM limiter's Charge and BindRecord
#include "monitor/region_file.h"
#include "region.h"  // libvgpu/src: the region's writer
#include "tests/monitor/temp_dir.h"
#include "vgpu/region_layout.h"

// libvgpu's real_driver.c provides this inside libvgpu.so; the SM limiter's CUPTI loader names it
// (never called here: nothing is measured, Charge is handed the figures).
extern "C" void* vgpu_real_dlsym(void* handle, const char* name) {
  return dlsym(handle, name);
}

namespace vgpu::monitor {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kGiB = 1ULL << 30;

// The layout of version 2, pinned: the monitor of one release reads the regions of containers
// started under another as long as both say the same version. Moving, resizing or adding a field
// is a new layout: bump VGPU_REGION_VERSION and write the new places here.
TEST(RegionContract, LayoutIsPinned) {
  struct Field {
    const char* name;
    size_t offset;
    size_t size;
    size_t want_offset;
    size_t want_size;
  };
#define VGPU_FIELD(T, f, off, size)                    \
  Field {                                              \
#T "." #f, offsetof(T, f), sizeof(T::f), off, size \
  }
  const Field fields[] = {
      VGPU_FIELD(vgpu_region_header, magic, 0, 8),
      VGPU_FIELD(vgpu_region_header, version, 8, 4),
      VGPU_FIELD(vgpu_region_header, header_size, 12, 4),
      VGPU_FIELD(vgpu_region_header, file_size, 16, 8),
      VGPU_FIELD(vgpu_region_header, max_devices, 24, 4),
      VGPU_FIELD(vgpu_region_header, max_procs, 28, 4),
      VGPU_FIELD(vgpu_region_header, device_count, 32, 4),
      VGPU_FIELD(vgpu_region_header, flags, 36, 4),
      VGPU_FIELD(vgpu_region_header, created_unix_s, 40, 8),
      VGPU_FIELD(vgpu_region_header, reserved, 48, 128),
      VGPU_FIELD(vgpu_region_device, uuid, 0, 96),
      VGPU_FIELD(vgpu_region_device, mem_limit, 96, 8),
      VGPU_FIELD(vgpu_region_device, mem_physical, 104, 8),
      VGPU_FIELD(vgpu_region_device, mem_used, 112, 8),
      VGPU_FIELD(vgpu_region_device, sm_limit, 120, 4),
      VGPU_FIELD(vgpu_region_device, flags, 124, 4),
      VGPU_FIELD(vgpu_region_device, lock, 128, 64),
      VGPU_FIELD(vgpu_region_device, sm_sharing, 192, 4),
      VGPU_FIELD(vgpu_region_device, sm_policy, 196, 4),
      VGPU_FIELD(vgpu_region_device, sm_tat_ns, 200, 8),
      VGPU_FIELD(vgpu_region_device, sm_busy_ns, 208, 8),
      VGPU_FIELD(vgpu_region_device, sm_charged_ns, 216, 8),
      VGPU_FIELD(vgpu_region_device, sm_throttled_ns, 224, 8),
      VGPU_FIELD(vgpu_region_device, sm_reserved, 232, 88),
      VGPU_FIELD(vgpu_region_device, context_bytes, 320, 8),
      VGPU_FIELD(vgpu_region_device, reserved, 328, 120),
      VGPU_FIELD(vgpu_region_proc, pid, 0, 4),
      VGPU_FIELD(vgpu_region_proc, status, 4, 4),
      VGPU_FIELD(vgpu_region_proc, start_time, 8, 8),
      VGPU_FIELD(vgpu_region_proc, priority, 16, 4),
      VGPU_FIELD(vgpu_region_proc, reserved0, 20, 4),
      VGPU_FIELD(vgpu_region_proc, mem_used, 24, 128),
      VGPU_FIELD(vgpu_region_proc, mem_overhead, 152, 128),
      VGPU_FIELD(vgpu_region_proc, sm_gpu_time_ns, 280, 128),
      VGPU_FIELD(vgpu_region_proc, sm_last_kernel_ns, 408, 128),
      VGPU_FIELD(vgpu_region_proc, host_pid, 536, 4),
      VGPU_FIELD(vgpu_region_proc, reserved1, 540, 4),
      VGPU_FIELD(vgpu_region_proc, host_start_time, 544, 8),
      VGPU_FIELD(vgpu_region_proc, reserved, 552, 112),
      VGPU_FIELD(vgpu_region, header, 0, 176),
      VGPU_FIELD(vgpu_region, devices, 176, 16 * size_t{448}),
      VGPU_FIELD(vgpu_region, procs, 176 + 16 * size_t{448}, 1024 * size_t{664}),
  };
#undef VGPU_FIELD
  EXPECT_EQ(VGPU_REGION_VERSION, 2u) << "a new version: pin its layout in this table";
  EXPECT_EQ(VGPU_REGION_MAGIC, 0x31555047564755ULL);
  EXPECT_EQ(VGPU_REGION_MAX_DEVICES, 16);
  EXPECT_EQ(VGPU_REGION_MAX_PROCS, 1024);
  for (const Field& f : fields) {
    EXPECT_EQ(f.offset, f.want_offset) << f.name;
    EXPECT_EQ(f.size, f.want_size) << f.name;
  }
  EXPECT_EQ(sizeof(vgpu_region_header), 176u);
  EXPECT_EQ(sizeof(vgpu_region_device), 448u);
  EXPECT_EQ(sizeof(vgpu_region_proc), 664u);
  EXPECT_EQ(sizeof(vgpu_region), 687280u);  // 671 KiB
  // The values of the enumerated fields.
  EXPECT_EQ(VGPU_SLOT_ACTIVE, 2u);
  EXPECT_EQ(VGPU_REGION_FLAG_OOM_KILLER, 1u);
  EXPECT_EQ(VGPU_REGION_FLAG_UNUSABLE, 2u);
  EXPECT_EQ(VGPU_DEVICE_FLAG_NO_MEMORY, 1u);
  EXPECT_EQ(VGPU_SM_SHARING_SHARED, 1);
  EXPECT_EQ(VGPU_SM_SHARING_ALONE, 2);
  EXPECT_EQ(VGPU_SM_POLICY_DEFAULT, 0u);
  EXPECT_EQ(VGPU_SM_POLICY_FORCE, 1u);
  EXPECT_EQ(VGPU_SM_POLICY_DISABLE, 2u);
  EXPECT_EQ(VGPU_SM_POLICY_MPS, 3u);
}

// A process that stays alive until killed: a slot's owner must be alive, or libvgpu reaps it.
class Sleeper {
 public:
  Sleeper() : pid_(fork()) {
    if (pid_ == 0) {
      for (;;) pause();
    }
  }
  ~Sleeper() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Sleeper(const Sleeper&) = delete;
  Sleeper& operator=(const Sleeper&) = delete;
  int pid() const { return pid_; }

 private:
  pid_t pid_;
};

class RegionContractTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (vgpu_region_handle& h : handles_) {
      if (h.region != nullptr) munmap(h.region, sizeof(vgpu_region));
      if (h.fd >= 0) close(h.fd);
    }
  }
  // A process of the container opening the region (libvgpu's vgpu_region_open).
  vgpu_region_handle& Open() {
    handles_.emplace_back();
    EXPECT_EQ(vgpu_region_open(path_.c_str(), &handles_.back()), 0);
    EXPECT_EQ(handles_.back().is_private, 0) << handles_.back().unusable_why;
    return handles_.back();
  }

  static constexpr const char* kName = "region.cache";
  TempDir dir_{"vgpu-region-contract"};
  std::string path_ = dir_.path() + "/" + kName;
  std::vector<vgpu_region_handle> handles_;
};

TEST_F(RegionContractTest, WriteThenRead) {
  handles_.reserve(4);  // Open() hands out references
  // Three device records, every field different from the others and from its default.
  struct DeviceCase {
    const char* uuid;
    uint64_t physical;
    uint64_t limit;  // VGPU_MEM_UNLIMITED: none; 0: no memory at all
    uint32_t sm_limit;
    uint32_t sm_policy;
    // What the monitor must read.
    uint64_t want_mem_limit;
    uint32_t want_flags;
  };
  const DeviceCase devices[] = {
      {"GPU-11111111-2222-3333-4444-555555555555", 80 * kGiB, 3000 * kMiB, 30, VGPU_SM_POLICY_FORCE,
       3000 * kMiB, 0},
      {"GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", 40 * kGiB, 0, 55, VGPU_SM_POLICY_DISABLE, 0,
       VGPU_DEVICE_FLAG_NO_MEMORY},
      {"GPU-0f0f0f0f-1e1e-2d2d-3c3c-4b4b4b4b4b4b", 24 * kGiB, VGPU_MEM_UNLIMITED, 0,
       VGPU_SM_POLICY_MPS, 0, 0},
  };
  // Two processes; what each does on which device record.
  struct Use {
    int device;
    uint64_t reserved;   // vgpu_region_reserve: tracked allocations
    uint64_t overhead;   // vgpu_region_set_overhead: measured context memory
    int64_t busy_ns;     // the SM limiter's Charge: kernel-busy time measured,
    int64_t charged_ns;  // its share charged (less: the GPU was shared),
    int64_t at_ns;       // ending then (the slot's last kernel)
  };
  struct ProcessCase {
    uint64_t start_time;
    int priority;
    std::vector<Use> uses;
    int32_t host_pid;  // written by the monitor; 0: not matched
  };
  const ProcessCase processes[] = {
      {1111,
       0,
       {{0, 100 * kMiB, 7 * kMiB, 5'000'000, 3'000'000, 900'000'000}, {1, 0, 3 * kMiB, 0, 0, 0}},
       4242},
      {2222, 1, {{2, 200 * kMiB, 11 * kMiB, 9'000'000, 4'000'000, 950'000'000}}, 0},
  };

  // libvgpu: the first process registers the devices, each process claims a slot and uses them.
  vgpu_region_handle& first = Open();
  for (size_t i = 0; i < std::size(devices); ++i) {
    const DeviceCase& d = devices[i];
    ASSERT_EQ(
        vgpu_region_register_device(&first, d.uuid, d.physical, d.limit, d.sm_limit, d.sm_policy),
        static_cast<int>(i));
  }
  // The SM limiter's per-device state of one process, bound to the records as at its first launch.
  auto limiter = std::make_unique<vgpu::sm::Device[]>(std::size(devices));
  for (size_t i = 0; i < std::size(devices); ++i) {
    limiter[i].region_index = static_cast<int32_t>(i);
    limiter[i].percent = 50;
    vgpu::sm::BindRecord(limiter[i], first.region->devices[i]);
  }
  Sleeper owners[std::size(processes)];
  std::vector<int> slots;
  for (size_t p = 0; p < std::size(processes); ++p) {
    const ProcessCase& pc = processes[p];
    ASSERT_GT(owners[p].pid(), 0);
    vgpu_region_handle& h = Open();
    for (const DeviceCase& d : devices) {  // a later process finds the records
      vgpu_region_register_device(&h, d.uuid, d.physical, 1, 99, VGPU_SM_POLICY_DEFAULT);
    }
    ASSERT_EQ(vgpu_region_claim_slot(&h, owners[p].pid(), pc.start_time, pc.priority), 0);
    slots.push_back(h.slot);
    vgpu::sm::g_config.region = h.region;
    vgpu::sm::g_config.region_slot = &h.slot;
    for (const Use& u : pc.uses) {
      if (u.reserved != 0) {
        ASSERT_EQ(vgpu_region_reserve(&h, u.device, u.reserved), 0);
      }
      vgpu_region_set_overhead(&h, u.device, u.overhead);
      if (u.busy_ns != 0) vgpu::sm::Charge(limiter[u.device], u.charged_ns, u.busy_ns, u.at_ns);
    }
  }
  vgpu::sm::g_config.region = nullptr;
  vgpu::sm::g_config.region_slot = nullptr;

  // The monitor reads.
  auto opened = RegionFile::Open(dir_.fd(), kName);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  RegionFile& file = **opened;
  ASSERT_EQ(file.DeviceCount(), std::size(devices));
  for (size_t i = 0; i < std::size(devices); ++i) {
    const DeviceCase& d = devices[i];
    SCOPED_TRACE(d.uuid);
    uint64_t used = 0;
    uint64_t busy = 0;
    for (const ProcessCase& pc : processes) {
      for (const Use& u : pc.uses) {
        if (u.device != static_cast<int>(i)) continue;
        used += u.reserved + u.overhead;
        busy += static_cast<uint64_t>(u.busy_ns);
      }
    }
    const RegionDevice got = file.Device(static_cast<uint32_t>(i));
    EXPECT_EQ(got.uuid, d.uuid);
    EXPECT_TRUE(got.uuid_terminated);
    EXPECT_EQ(got.mem_limit, d.want_mem_limit);
    EXPECT_EQ(got.mem_physical, d.physical);
    EXPECT_EQ(got.mem_used, used);
    EXPECT_EQ(got.sm_limit, d.sm_limit);
    EXPECT_EQ(got.flags, d.want_flags);
    EXPECT_EQ(got.sm_policy, d.sm_policy);
    EXPECT_EQ(got.sm_sharing, VGPU_SM_SHARING_UNKNOWN);
    EXPECT_EQ(got.sm_busy_ns, busy);
  }
  EXPECT_EQ(file.OccupiedSlots(), slots);
  for (size_t p = 0; p < std::size(processes); ++p) {
    const ProcessCase& pc = processes[p];
    SCOPED_TRACE("process " + std::to_string(p));
    const RegionSlot got = file.Slot(slots[p]);
    EXPECT_EQ(got.pid, owners[p].pid());
    EXPECT_EQ(got.start_time, pc.start_time);
    EXPECT_EQ(file.Identity(slots[p]).start_time, pc.start_time);
    EXPECT_EQ(got.host_pid, 0);
    EXPECT_EQ(got.host_start_time, 0u);
    for (size_t d = 0; d < VGPU_REGION_MAX_DEVICES; ++d) {
      uint64_t reserved = 0;
      uint64_t overhead = 0;
      uint64_t last_kernel = 0;
      for (const Use& u : pc.uses) {
        if (u.device != static_cast<int>(d)) continue;
        reserved = u.reserved;
        overhead = u.overhead;
        last_kernel = static_cast<uint64_t>(u.at_ns);
      }
      EXPECT_EQ(got.mem_used[d], reserved) << "device " << d;
      EXPECT_EQ(got.mem_overhead[d], overhead) << "device " << d;
      EXPECT_EQ(got.last_kernel_ns[d], last_kernel) << "device " << d;
    }
  }

  // The monitor writes; libvgpu reads.
  const int32_t sharing[] = {VGPU_SM_SHARING_ALONE, VGPU_SM_SHARING_SHARED,
                             VGPU_SM_SHARING_UNKNOWN};
  for (size_t i = 0; i < std::size(devices); ++i) {
    file.WriteSharing(static_cast<uint32_t>(i), sharing[i]);
  }
  for (size_t p = 0; p < std::size(processes); ++p) {
    if (processes[p].host_pid != 0) {
      file.WriteHostPid(slots[p], processes[p].host_pid, processes[p].start_time);
    }
  }
  for (size_t i = 0; i < std::size(devices); ++i) {
    EXPECT_EQ(__atomic_load_n(limiter[i].sharing, __ATOMIC_RELAXED), sharing[i]) << i;
    EXPECT_EQ(file.Device(static_cast<uint32_t>(i)).sm_sharing, sharing[i]) << i;
  }
  for (size_t p = 0; p < std::size(processes); ++p) {
    const ProcessCase& pc = processes[p];
    const unsigned want = pc.host_pid != 0 ? static_cast<unsigned>(pc.host_pid)
                                           : static_cast<unsigned>(owners[p].pid());
    EXPECT_EQ(vgpu_region_nvml_pid(&first.region->procs[slots[p]]), want) << "process " << p;
    EXPECT_EQ(file.Slot(slots[p]).host_pid, pc.host_pid) << "process " << p;
  }
}

// libvgpu marks a region it finds corrupt (here: a device count past the records, which the
// container wrote) in the header; the monitor then refuses it, saying why, even once the count is
// back in range.
TEST_F(RegionContractTest, UnusableMarkIsRefused) {
  vgpu_region_handle& h = Open();
  ASSERT_EQ(vgpu_region_register_device(&h, "GPU-1", 16 * kGiB, kGiB, 0, VGPU_SM_POLICY_DEFAULT),
            0);
  ASSERT_TRUE(RegionFile::Open(dir_.fd(), kName).ok());
  h.region->header.device_count = 1000;
  ASSERT_NE(vgpu_region_failure(&h), nullptr);
  h.region->header.device_count = 1;
  auto opened = RegionFile::Open(dir_.fd(), kName);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("libvgpu found it so and marked it unusable"),
            std::string::npos)
      << opened.status().ToString();
}

}  // namespace
}  // namespace vgpu::monitor
