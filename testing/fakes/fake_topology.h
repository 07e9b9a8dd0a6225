#pragma once

// Facts both fake libraries must report identically for physical GPU `index`.

#include <cstdio>
#include <string>

namespace vgpu::fake {

inline constexpr int kCudaDriverVersion = 13000;
inline constexpr const char* kNvidiaDriverVersion = "580.65.06";
inline constexpr unsigned kPciDeviceId = 0x233010de;  // H100 SXM5 80GB, vendor 10de

inline unsigned PciBus(int index) {
  return 0x18 + static_cast<unsigned>(index);
}

// "0000:19:00.0" (CUDA, NVML busIdLegacy) or "00000000:19:00.0" (NVML busId).
inline std::string PciBusId(int index, bool long_domain) {
  char buf[32];
  std::snprintf(buf, sizeof buf, long_domain ? "%08X:%02X:00.0" : "%04X:%02X:00.0", 0u,
                PciBus(index));
  return buf;
}

}  // namespace vgpu::fake
