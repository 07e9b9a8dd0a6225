#pragma once

// Parsing helpers of the codecs (internal to core/codec); the generic ones live in
// core/base/strings.h.

#include <string>
#include <string_view>

#include "core/base/strings.h"

namespace vgpu::codec_internal {

using ::vgpu::ParseInt;
using ::vgpu::Split;

inline std::string Quote(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

}  // namespace vgpu::codec_internal
