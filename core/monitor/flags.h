#pragma once

// Parsing of the node monitor's command-line values that HAMi's deployment hands over in Go's
// spellings: HAMI_RESYNC_INTERVAL is a Go duration ("5m", "1h30m", "90s"), the listen address a
// Go listen address (":9394", "0.0.0.0:9394", "[::1]:9394").

#include <chrono>
#include <string>
#include <string_view>

#include "core/base/go_duration.h"  // ParseGoDuration, for --cleanup-grace
#include "core/base/status.h"

namespace vgpu::monitor {

struct ListenAddress {
  std::string host;  // "0.0.0.0" when the text gives none
  int port = 0;      // 0 = any free port
};

// "host:port", ":port" (all interfaces), "[v6]:port" or "port".
Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace vgpu::monitor
