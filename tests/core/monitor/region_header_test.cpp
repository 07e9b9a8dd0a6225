#include "core/monitor/region_header.h"

#include <gtest/gtest.h>

#include <functional>

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

}  // namespace
}  // namespace vgpu::monitor
