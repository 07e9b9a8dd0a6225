#pragma once

// The JSON form of a NodeSnapshot: what the monitor serves at /api/v1/snapshot and `vgpu top`
// reads. Field names are snake_case versions of the struct's; optional values are null when
// absent. Decoding rejects what is not a snapshot with a message naming the field.

#include <string>

#include "core/base/status.h"
#include "core/monitor/snapshot.h"

namespace vgpu::monitor {

std::string SnapshotToJson(const NodeSnapshot& s);
Result<NodeSnapshot> SnapshotFromJson(const std::string& text);

}  // namespace vgpu::monitor
