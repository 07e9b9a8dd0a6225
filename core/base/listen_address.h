#pragma once

// A daemon's listen address as HAMi's Go binaries take it (net.Listen's forms): "host:port",
// ":port" (every interface), "[v6]:port" or a bare "port". The one parser of the scheduler's
// --http-bind/--https-bind/--metrics-bind and the monitor's --metrics-bind-address.

#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/base/strings.h"

namespace vgpu {

struct ListenAddress {
  std::string host;  // "0.0.0.0" when the text gives none; brackets of a v6 host removed
  int port = 0;      // 0 = any free port
};

inline Result<ListenAddress> ParseListenAddress(std::string_view text) {
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

}  // namespace vgpu
