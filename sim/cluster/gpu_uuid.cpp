#include "sim/cluster/gpu_uuid.h"

#include <cstdint>
#include <cstdio>

namespace vgpu::sim {

namespace {

// FNV-1a 64: deterministic on every platform (std::hash is not).
uint64_t Fnv1a(std::string_view text, uint64_t seed) {
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

std::string SimulatedGpuUuid(std::string_view node_name, int index) {
  const std::string key = std::string(node_name) + "/" + std::to_string(index);
  const uint64_t a = Fnv1a(key, 0);
  const uint64_t b = Fnv1a(key, 0x9e3779b97f4a7c15ULL);
  char buf[64];
  (void)std::snprintf(buf, sizeof(buf), "GPU-%08x-%04x-%04x-%04x-%012llx",
                      static_cast<unsigned>(a >> 32), static_cast<unsigned>((a >> 16) & 0xffff),
                      static_cast<unsigned>(a & 0xffff), static_cast<unsigned>(b >> 48),
                      static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

}  // namespace vgpu::sim
