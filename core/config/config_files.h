#pragma once

// Thin file-reading adapters over the pure parsers of device_config.h (the only I/O here; in its
// own library, vgpu_core_config_files, so that vgpu_core_config stays pure).

#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/config/device_config.h"

namespace vgpu::config {

Result<std::string> ReadTextFile(const std::string& path);
Result<NvidiaConfig> LoadDeviceConfigFile(const std::string& path);
Result<std::vector<NodeOverride>> LoadNodeConfigFile(const std::string& path);

}  // namespace vgpu::config
