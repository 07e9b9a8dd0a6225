#include "core/monitor/proc_parse.h"

#include <algorithm>
#include <charconv>

#include "core/base/strings.h"

namespace vgpu::monitor {
namespace {

// The next field separated by spaces or tabs, advancing `s` past it; empty at the end.
std::string_view NextField(std::string_view& s) {
  size_t start = s.find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    s = {};
    return {};
  }
  s.remove_prefix(start);
  const size_t end = std::min(s.find_first_of(" \t"), s.size());
  std::string_view field = s.substr(0, end);
  s.remove_prefix(end);
  return field;
}

// The value part of the line "<key>..." of a status file, if present.
std::optional<std::string_view> StatusLine(std::string_view status, std::string_view key) {
  size_t at = 0;
  while (at < status.size()) {
    const size_t nl = std::min(status.find('\n', at), status.size());
    std::string_view line = status.substr(at, nl - at);
    if (line.starts_with(key)) return line.substr(key.size());
    at = nl + 1;
  }
  return std::nullopt;
}

std::optional<std::vector<int32_t>> ParsePidList(std::string_view rest) {
  std::vector<int32_t> pids;
  for (std::string_view f = NextField(rest); !f.empty(); f = NextField(rest)) {
    auto pid = ParseInt<int32_t>(f);
    if (!pid || *pid <= 0) return std::nullopt;
    pids.push_back(*pid);
  }
  if (pids.empty()) return std::nullopt;
  return pids;
}

std::optional<uint32_t> ParseHex(std::string_view s) {
  uint32_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::vector<int32_t>> ParseNsPids(std::string_view status) {
  if (auto ns = StatusLine(status, "NSpid:")) return ParsePidList(*ns);
  if (auto pid = StatusLine(status, "Pid:")) return ParsePidList(*pid);
  return std::nullopt;
}

std::optional<uint64_t> ParseStatStartTime(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(paren + 1);
  // Fields 3..21 come before the start time.
  for (int field = 3; field < 22; ++field) {
    if (NextField(rest).empty()) return std::nullopt;
  }
  return ParseInt<uint64_t>(NextField(rest));
}

std::optional<char> ParseStatState(std::string_view stat) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(paren + 1);
  const std::string_view state = NextField(rest);
  if (state.size() != 1) return std::nullopt;
  return state[0];
}

std::vector<FileId> ParseMappedFiles(std::string_view maps) {
  std::vector<FileId> out;
  while (!maps.empty()) {
    const size_t nl = std::min(maps.find('\n'), maps.size());
    std::string_view line = maps.substr(0, nl);
    maps.remove_prefix(std::min(nl + 1, maps.size()));
    NextField(line);  // address range
    NextField(line);  // permissions
    NextField(line);  // offset
    const std::string_view dev = NextField(line);
    const std::string_view inode_text = NextField(line);
    const size_t colon = dev.find(':');
    if (colon == std::string_view::npos) continue;
    auto major = ParseHex(dev.substr(0, colon));
    auto minor = ParseHex(dev.substr(colon + 1));
    auto inode = ParseInt<uint64_t>(inode_text);
    if (!major || !minor || !inode || *inode == 0) continue;
    const FileId id{*major, *minor, *inode};
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  }
  return out;
}

}  // namespace vgpu::monitor
