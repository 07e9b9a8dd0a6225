#pragma once

// Kubernetes resource quantities ("3000", "3Gi", "500M", "1.5k", "100m", "1e3").

#include <cstdint>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::codec {

// The quantity's integer value, rounded up like resource.Quantity.Value() ("100m" -> 1,
// "1.5Gi" -> 1610612736). Errors on malformed text, negative values and overflow of int64.
Result<int64_t> ParseQuantity(std::string_view text);

// A GPU memory request in MiB. HAMi reads the quantity's value as MiB ("3000" -> 3000), which we
// keep for every decimal form, because kube-apiserver stores "3000" as "3k" ("3k" -> 3000,
// "1e3" -> 1000). A binary suffix is read as bytes and rounded up to MiB ("3Gi" -> 3072,
// "1.5Gi" -> 1536), where HAMi would take 3Gi as 3221225472 MiB and leave the pod unschedulable.
Result<int64_t> ParseMemoryMiB(std::string_view text);

}  // namespace vgpu::codec
