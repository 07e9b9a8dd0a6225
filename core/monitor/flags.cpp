#include "core/monitor/flags.h"

#include <utility>

#include "core/base/strings.h"

namespace vgpu::monitor {

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  ListenAddress out;
  const size_t colon = text.rfind(':');
  std::string_view port_text = text;
  if (colon != std::string_view::npos) {
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  if (out.host.empty()) out.host = "0.0.0.0";
  const std::optional<int> port = ParseInt<int>(port_text);
  if (!port || *port < 0 || *port > 65535) {
    return InvalidArgument("listen address \"" + std::string(text) +
                           "\" needs a port 0..65535 (host:port, :port or [v6]:port)");
  }
  out.port = *port;
  return out;
}

std::vector<std::string> GoStyleArgs(std::vector<std::string> args) {
  for (std::string& a : args) {
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || a[1] == '-') continue;
    const bool letter = (a[1] >= 'a' && a[1] <= 'z') || (a[1] >= 'A' && a[1] <= 'Z');
    const size_t eq = a.find('=');
    const size_t name_len = (eq == std::string::npos ? a.size() : eq) - 1;
    if (letter && (name_len > 1 || eq != std::string::npos)) a.insert(0, "-");
  }
  return args;
}

}  // namespace vgpu::monitor
