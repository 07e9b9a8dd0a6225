#pragma once

// The numbers and words given to `vgpu` flags, checked before anything runs: one home for the
// checks and their messages, so that every flag of every subcommand answers a bad value the same
// way, naming the value and what is accepted ("--nodes: '-3' is too small (min 1)"). Pure: no I/O.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/base/status.h"
#include "core/base/whole_number.h"

namespace vgpu::cli {

// Whole numbers: core/base/whole_number.h (ParseWholeNumber), which WholeNumber() below checks.
using ::vgpu::ParseWholeNumber;

// --gpumem's value in MiB: a plain number is MiB ("4096"); a unit m/g/t (case-insensitive,
// optionally followed by "i" and/or "b": 3g, 3G, 3Gi, 3GiB, 3GB) is a power of 1024, as libvgpu
// reads CUDA_DEVICE_MEMORY_LIMIT (docs/libvgpu.md). At least 1 MiB, at most `max_mib`. The
// message lists the accepted forms.
Result<uint64_t> ParseMemoryMiB(std::string_view text, uint64_t max_mib);

// CLI11 validators over the same checks (CLI11 prefixes the flag's name to the message).
// A whole number within [min, max]; CLI11 then converts the checked text to the option's type.
CLI::Validator WholeNumber(int64_t min, int64_t max);
// A value that is not empty: an empty --gpus or --region must not mean "the default".
CLI::Validator NotEmpty();
// One of `words`, exactly: "'grpcx' is not one of grpc, inprocess, allocator, auto".
CLI::Validator OneOf(std::vector<std::string> words);

}  // namespace vgpu::cli
