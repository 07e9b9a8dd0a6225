#pragma once

// Parsing of the node monitor's command-line values that HAMi's deployment hands over in Go's
// spellings: HAMI_RESYNC_INTERVAL is a Go duration ("5m", "1h30m", "90s"), the listen address a
// Go listen address (":9394", "0.0.0.0:9394", "[::1]:9394").

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/go_duration.h"  // ParseGoDuration, for --cleanup-grace
#include "core/base/status.h"

namespace vgpu::monitor {

struct ListenAddress {
  std::string host;  // "0.0.0.0" when the text gives none
  int port = 0;      // 0 = any free port
};

// "host:port", ":port" (all interfaces), "[v6]:port" or "port".
Result<ListenAddress> ParseListenAddress(std::string_view text);

// Go's flag package reads `-name=value` like `--name=value`, and HAMi's chart passes `-v=4`; our
// parser reads a single dash as a short option. Rewrites each single-dash argument whose name
// starts with a letter and is longer than one letter, or carries `=value`, to the double-dash
// form ("-v=4" -> "--v=4", "-metrics-bind-address=:9394" -> "--metrics-bind-address=:9394");
// leaves "-v", "-5", "--x" and everything after "--" alone.
std::vector<std::string> GoStyleArgs(std::vector<std::string> args);

}  // namespace vgpu::monitor
