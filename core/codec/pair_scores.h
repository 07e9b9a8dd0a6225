#pragma once

// `hami.io/node-nvidia-score`: the GPU pair scores a node's device plugin publishes for the
// topology-aware GPU policy. HAMi's form (pkg/device/nvidia/calculate_score.go, ListDeviceScore,
// written with Go's json.Marshal; read with json.Unmarshal in pkg/device/devices.go):
//   [{"uuid":"GPU-0","score":{"GPU-1":420,"GPU-2":10}},{"uuid":"GPU-1","score":{...}}, ...]
// one entry per GPU in the device list's order, the score of every other GPU keyed by its UUID
// (keys in byte order, as Go writes maps); a field that is empty is left out (omitempty), so a
// node of one GPU writes [{"uuid":"GPU-0"}]. Higher = more bandwidth between the two.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace vgpu::codec {

struct DevicePairScore {
  std::string uuid;
  std::map<std::string, int64_t> scores;  // peer UUID -> score
  friend bool operator==(const DevicePairScore&, const DevicePairScore&) = default;
};
using DevicePairScores = std::vector<DevicePairScore>;

// Byte for byte what HAMi's device plugin writes for the same list (Go's json.Marshal: compact,
// keys sorted, '<', '>', '&', U+2028 and U+2029 escaped as \u00xx / \u20xx).
std::string EncodePairScores(const DevicePairScores& scores);

// Accepts what Go's json.Unmarshal accepts into HAMi's type: `null` (no entries), null entries
// (empty), field names in any letter case, unknown fields ignored, null fields left empty.
// InvalidArgument for anything else (not JSON, not an array, a score that is not an integer).
Result<DevicePairScores> DecodePairScores(std::string_view text);

}  // namespace vgpu::codec
