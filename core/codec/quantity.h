#pragma once

// Kubernetes resource quantities ("3000", "3Gi", "500M", "1.5k", "100m", "1e3").

#include <cstdint>
#include <string_view>

#include "core/base/status.h"

namespace vgpu::codec {

// What to do with a quantity whose value is not a whole number ("100m", "0.5", "1.5").
enum class Fraction {
  kRoundUp,  // like resource.Quantity.Value(): "100m" -> 1
  // An error naming the value. Kubernetes accepts only whole numbers for extended resources
  // (nvidia.com/gpu, gpumem, ...), so a pod's vGPU resources are read this way: rounding "0.5"
  // GPUs up to 1 or "1500m" cores up to 2 would grant more than the pod says.
  kRefuse,
};

// The quantity's integer value ("100m" -> 1 when rounded up, "1.5Gi" -> 1610612736). Errors on
// malformed text, negative values and overflow of int64.
Result<int64_t> ParseQuantity(std::string_view text, Fraction fraction = Fraction::kRoundUp);

// A GPU memory request in MiB. HAMi reads the quantity's value as MiB ("3000" -> 3000), which we
// keep for every decimal form, because kube-apiserver stores "3000" as "3k" ("3k" -> 3000,
// "1e3" -> 1000). A binary suffix is read as bytes and rounded up to MiB ("3Gi" -> 3072,
// "1.5Gi" -> 1536), where HAMi would take 3Gi as 3221225472 MiB and leave the pod unschedulable.
// `fraction` applies to the quantity's own value (MiB, or bytes with a binary suffix): with
// kRefuse "0.5" is an error, "0.5Ki" (512 bytes) is 1 MiB.
Result<int64_t> ParseMemoryMiB(std::string_view text, Fraction fraction = Fraction::kRoundUp);

}  // namespace vgpu::codec
