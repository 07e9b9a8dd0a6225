// Pod device annotations (hami.io/vgpu-devices-allocated, -to-allocate): any text decodes or
// fails with a message; what decodes re-encodes to text that decodes to the same devices.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/codec/pod_devices.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto pod = vgpu::codec::DecodePodDevices(text);
  if (!pod.ok()) {
    vgpu::fuzz::Check(!pod.status().message().empty(), "an error without a message");
    return 0;
  }
  const std::string encoded = vgpu::codec::EncodePodDevices(*pod);
  auto again = vgpu::codec::DecodePodDevices(encoded);
  vgpu::fuzz::Check(again.ok(), "re-encoded devices do not decode", encoded);
  vgpu::fuzz::Check(*again == *pod, "round trip changed the devices", encoded);
  (void)vgpu::codec::FirstNonEmptyEntry(*pod);
  return 0;
}
