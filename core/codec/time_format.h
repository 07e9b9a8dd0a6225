#pragma once

// Time formats of HAMi annotation values, UTC-based, to whole seconds.

#include <chrono>
#include <string>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::codec {

using Seconds = std::chrono::sys_seconds;

// "2024-05-01T10:20:30Z" (what Go's time.RFC3339 writes for UTC).
std::string FormatRfc3339(Seconds t);
// Accepts "Z" or "+hh:mm"/"-hh:mm" offsets and fractional seconds (dropped).
Result<Seconds> ParseRfc3339(std::string_view text);

// "2024-05-01 10:20:30" (handshake form). Parsing also accepts '.' as date separator
// ("2024.05.01 10:20:30"), which some HAMi versions write.
std::string FormatDateTime(Seconds t);
Result<Seconds> ParseDateTime(std::string_view text);

}  // namespace vgpu::codec
