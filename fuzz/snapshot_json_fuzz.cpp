// The node monitor's snapshot as `vgpu top` reads it from the monitor's HTTP answer
// (core/monitor/snapshot_json.h: parsed within codec::kNodeFileJson). Property: a snapshot read
// is written back and read again to the same snapshot text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/monitor/snapshot_json.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const vgpu::Result<vgpu::monitor::NodeSnapshot> s = vgpu::monitor::SnapshotFromJson(text);
  if (!s.ok()) {
    vgpu::fuzz::Check(!s.status().message().empty(), "an error without a message", text);
    return 0;
  }
  const std::string written = vgpu::monitor::SnapshotToJson(*s);
  const vgpu::Result<vgpu::monitor::NodeSnapshot> back = vgpu::monitor::SnapshotFromJson(written);
  vgpu::fuzz::Check(back.ok(), "a snapshot written is not read back", written);
  vgpu::fuzz::Check(vgpu::monitor::SnapshotToJson(*back) == written,
                    "a snapshot does not survive a round trip", written);
  return 0;
}
