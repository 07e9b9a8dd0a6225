// Kubernetes quantities (resource limits and requests of pods: nvidia.com/gpumem and others).
// A quantity is never negative, and a memory ask of a decimal quantity is its value in MiB.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/codec/quantity.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto q = vgpu::codec::ParseQuantity(text);
  if (q.ok()) vgpu::fuzz::Check(*q >= 0, "negative quantity", text);
  auto mib = vgpu::codec::ParseMemoryMiB(text);
  if (mib.ok()) vgpu::fuzz::Check(*mib >= 0, "negative MiB", text);
  return 0;
}
