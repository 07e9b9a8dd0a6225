#pragma once

// Standard base64 (RFC 4648 §4, with '=' padding), as Go's encoding/json writes []byte fields:
// kubelet's device-manager checkpoint stores each Allocate answer that way.

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::codec {

// The decoded bytes; InvalidArgument naming the offset of the first character that is not
// base64, or a length that is not a multiple of 4.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace vgpu::codec
