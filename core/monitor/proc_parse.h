#pragma once

// Parsers of the /proc files the monitor reads to match region slots to host processes. Pure: the
// proc table (monitor/proc_table.cpp) reads the files and hands the text here.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/monitor/host_process.h"

namespace vgpu::monitor {

// The NSpid line of /proc/<pid>/status ("NSpid:\t4242\t17": outermost namespace first). Kernels
// before 4.1 have no NSpid: the Pid line stands in for it (one entry). None when neither parses.
std::optional<std::vector<int32_t>> ParseNsPids(std::string_view status);

// Field 22 (starttime, clock ticks since boot) of /proc/<pid>/stat. The command name (field 2) is
// in parentheses and may hold spaces and parentheses itself, so fields are counted from the last
// ')'.
std::optional<uint64_t> ParseStatStartTime(std::string_view stat);

// Field 3 (state: R, S, D, Z, X, ...) of /proc/<pid>/stat, counted from the last ')' likewise.
std::optional<char> ParseStatState(std::string_view stat);

// The distinct files mapped in /proc/<pid>/maps ("addr perms offset MAJ:MIN inode path"; device
// numbers in hex, inode in decimal), skipping anonymous mappings (inode 0) and malformed lines.
std::vector<FileId> ParseMappedFiles(std::string_view maps);

}  // namespace vgpu::monitor
