#include "core/config/config_files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace vgpu::config {

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFound("cannot open " + path + ": " + std::strerror(errno));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return Internal("reading " + path + " failed");
  return buf.str();
}

Result<NvidiaConfig> LoadDeviceConfigFile(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  auto c = ParseDeviceConfigYaml(*text);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

Result<std::vector<NodeOverride>> LoadNodeConfigFile(const std::string& path) {
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  auto c = ParseNodeConfigJson(*text);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

}  // namespace vgpu::config
