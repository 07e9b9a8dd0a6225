// The device plugin / scheduler handshake (hami.io/node-handshake) and the node lock
// (hami.io/mutex.lock): annotation values any writer may have left. What decodes round-trips.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/codec/node_lock.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto h = vgpu::codec::DecodeHandshake(text); h.ok()) {
    const std::string encoded = vgpu::codec::EncodeHandshake(*h);
    auto again = vgpu::codec::DecodeHandshake(encoded);
    vgpu::fuzz::Check(again.ok() && *again == *h, "handshake round trip", encoded);
  }
  if (auto lock = vgpu::codec::DecodeNodeLock(text); lock.ok()) {
    const std::string encoded = vgpu::codec::EncodeNodeLock(*lock);
    auto again = vgpu::codec::DecodeNodeLock(encoded);
    vgpu::fuzz::Check(again.ok() && *again == *lock, "node lock round trip", encoded);
  }
  return 0;
}
