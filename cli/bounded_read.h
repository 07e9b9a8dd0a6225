#pragma once

// Reading a file an operator names (a scenario, a snapshot) with a cap: /dev/zero, a FIFO or a
// file that keeps growing is a clear error, never memory grown until the machine gives out.

#include <cstddef>
#include <string>

#include "core/base/status.h"

namespace vgpu::cli {

// The whole text of `path`, a regular file (followed through links) of at most `max_bytes`,
// read with that cap whatever its size claims. `what` names it in messages ("scenario file").
// InvalidArgument naming the file and the problem otherwise.
Result<std::string> ReadBoundedFile(const std::string& path, size_t max_bytes,
                                    const std::string& what);

}  // namespace vgpu::cli
