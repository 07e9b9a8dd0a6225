#pragma once

// Standard base64 (RFC 4648 §4, with '=' padding), as Go's encoding/base64 StdEncoding and
// encoding/json's []byte fields write it: kubelet's device-manager checkpoint (each Allocate
// answer), a kubeconfig's `*-data` fields, AdmissionResponse.patch. The one home of base64 here.

#include <string>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::codec {

// The bytes as base64 text, padded with '=' to a multiple of 4 characters.
std::string Base64Encode(std::string_view bytes);

// The decoded bytes. Line breaks ('\r', '\n') are skipped, as Go's decoder does (a kubeconfig may
// fold its certificates); anything else outside the alphabet, padding anywhere but at the very
// end, or a length (without line breaks) that is not a multiple of 4 is InvalidArgument naming
// the offset of the first bad character or the length.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace vgpu::codec
