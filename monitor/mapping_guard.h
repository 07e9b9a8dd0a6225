#pragma once

// Keeps the monitor alive when a container truncates its region file under the monitor's
// mapping. Reading a page of a MAP_SHARED mapping beyond the file's end raises SIGBUS; region
// files belong to the containers, so any tenant could otherwise stop the node's monitor. Mappings
// registered here get, on such a fault, a zero page mapped over the faulting page: the read
// completes with zeros and the next tick's RegionFile::Check sees the truncated file and drops it.
// A SIGBUS anywhere else keeps its default action.

#include <cstddef>

namespace vgpu::monitor {

// Registers [begin, begin + size) (installs the handler on first use); false when the table of
// guarded mappings is full (the mapping is then unguarded, which the caller reports).
bool GuardMapping(void* begin, size_t size);
void UnguardMapping(void* begin);

}  // namespace vgpu::monitor
