#include "core/monitor/region_header.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace vgpu::monitor {
namespace {

vgpu_region_header Good() {
  vgpu_region_header h{};
  h.magic = VGPU_REGION_MAGIC;
  h.version = VGPU_REGION_VERSION;
  h.header_size = sizeof(vgpu_region_header);
  h.file_size = sizeof(vgpu_region);
  h.max_devices = VGPU_REGION_MAX_DEVICES;
  h.max_procs = VGPU_REGION_MAX_PROCS;
  h.device_count = 1;
  return h;
}

TEST(ValidateRegionHeader, OneMessagePerProblem) {
  constexpr uint64_t kSize = sizeof(vgpu_region);
  struct Case {
    const char* name;
    std::function<void(vgpu_region_header&)> change;
    uint64_t file_size;
    const char* want;  // "" = valid
  };
  const Case cases[] = {
      {"valid", [](auto&) {}, kSize, ""},
      {"16 devices", [](auto& h) { h.device_count = 16; }, kSize, ""},
      {"empty", [](auto& h) { h = {}; }, 0, "empty"},
      {"shorter than a header", [](auto& h) { h = {}; }, 12, "truncated: 12 bytes"},
      {"laid out yet", [](auto& h) { h.magic = 0; }, kSize, "not laid out yet"},
      {"HAMi-core", [](auto& h) { h.magic = 19920718; }, 2008952, "HAMi-core"},
      {"foreign", [](auto& h) { h.magic = 0x1122334455667788ULL; }, kSize,
       "not a vgpu region (magic 0x1122334455667788"},
      {"other version", [](auto& h) { h.version = 1; }, kSize, "region version 1"},
      {"header size", [](auto& h) { h.header_size = 8; }, kSize, "header size 8"},
      {"file size field", [](auto& h) { h.file_size = 4096; }, kSize,
       "header gives file size 4096"},
      {"other limits", [](auto& h) { h.max_procs = 64; }, kSize, "64 process slots"},
      {"corrupt device count", [](auto& h) { h.device_count = 17; }, kSize, "device_count 17"},
      {"OOM killer flag", [](auto& h) { h.flags = VGPU_REGION_FLAG_OOM_KILLER; }, kSize, ""},
      {"marked unusable by libvgpu",
       [](auto& h) { h.flags = VGPU_REGION_FLAG_OOM_KILLER | VGPU_REGION_FLAG_UNUSABLE; }, kSize,
       "corrupt: libvgpu found it so and marked it unusable; the container's processes refuse "
       "GPU memory allocations"},
      {"truncated", [](auto&) {}, kSize - 1, "truncated: "},
      {"oversized", [](auto&) {}, kSize + 4096, "oversized: "},
  };
  for (const Case& c : cases) {
    vgpu_region_header h = Good();
    c.change(h);
    const Status s = ValidateRegionHeader(h, c.file_size);
    if (*c.want == '\0') {
      EXPECT_TRUE(s.ok()) << c.name << ": " << s.ToString();
    } else {
      EXPECT_NE(s.message().find(c.want), std::string::npos) << c.name << ": " << s.ToString();
    }
  }
}

// A file being created may become a region (Unavailable: retried); anything else is not one.
TEST(ValidateRegionHeader, BeingCreatedIsToldApartFromBroken) {
  vgpu_region_header h = Good();
  EXPECT_EQ(ValidateRegionHeader({}, 0).code(), StatusCode::kUnavailable);
  h.magic = 0;
  EXPECT_EQ(ValidateRegionHeader(h, sizeof(vgpu_region)).code(), StatusCode::kUnavailable);
  h = Good();
  h.device_count = 0xffffffffu;
  const Status s = ValidateRegionHeader(h, sizeof(vgpu_region));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("corrupt: device_count 4294967295"), std::string::npos) << s.message();
}

// Device records are the container's to write; what the monitor passes on from them (UUIDs into
// metric labels and JSON, SM limits and policies into the snapshot) must be what libvgpu writes.
TEST(ValidateDeviceRecords, OneMessagePerScribble) {
  const std::string a = "GPU-00000000-0000-0000-0000-000000000000";
  const std::string b = "MIG-11111111-2222-3333-4444-555555555555";
  struct Case {
    const char* name;
    std::vector<DeviceRecordFields> records;
    const char* want;  // "" = valid
  };
  const std::string bad_bytes = std::string("GPU-\xff\"\n", 7);
  const Case cases[] = {
      {"none", {}, ""},
      {"two GPUs", {{a, true, 30, 0}, {b, true, 100, 2}}, ""},
      {"being registered (empty)", {{"", true, 0, 0}}, ""},
      {"no NUL", {{a, false, 0, 0}}, "device record 0: UUID without an end"},
      {"bytes",
       {{a, true, 0, 0}, {bad_bytes, true, 0, 0}},
       "device record 1: UUID \"GPU-\\xff\"\\x0a\" is no NVML UUID"},
      {"a space", {{"GPU-1 2", true, 0, 0}}, "is no NVML UUID"},
      {"the same GPU twice",
       {{a, true, 0, 0}, {a, true, 0, 0}},
       "device record 1: names the GPU of record 0 again"},
      {"SM limit", {{a, true, 4294967295u, 0}}, "device record 0: SM limit 4294967295 %"},
      {"SM policy", {{a, true, 0, 4}}, "device record 0: SM policy 4"},
  };
  for (const Case& c : cases) {
    const Status s = ValidateDeviceRecords(c.records);
    if (*c.want == '\0') {
      EXPECT_TRUE(s.ok()) << c.name << ": " << s.ToString();
    } else {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.name;
      EXPECT_NE(s.message().find(c.want), std::string::npos) << c.name << ": " << s.ToString();
      EXPECT_TRUE(s.message().starts_with("corrupt: ")) << c.name;
    }
  }
}

}  // namespace
}  // namespace vgpu::monitor
