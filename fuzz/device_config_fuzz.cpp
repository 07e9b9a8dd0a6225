// HAMi's configuration files: device-config.yaml (first byte 'y') and the per-node config.json
// (any other first byte), as a ConfigMap may hold them; then the precedence merge of what parsed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/config/device_config.h"

using vgpu::config::FlagOverrides;
using vgpu::config::MergeNodeSettings;
using vgpu::config::NvidiaConfig;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 'y') {
    auto config = vgpu::config::ParseDeviceConfigYaml(text);
    if (config.ok()) (void)MergeNodeSettings(*config, {}, "node", FlagOverrides{});
  } else {
    auto nodes = vgpu::config::ParseNodeConfigJson(text);
    if (nodes.ok() && !nodes->empty()) {
      (void)MergeNodeSettings(NvidiaConfig{}, *nodes, nodes->front().name, FlagOverrides{});
    }
  }
  return 0;
}
