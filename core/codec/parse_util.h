#pragma once

// Small strict parsing helpers shared by the codecs (internal to core/codec).

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::codec_internal {

// Whole-string base-10 integer; no sign for unsigned, no spaces, no trailing garbage.
template <typename Int>
std::optional<Int> ParseInt(std::string_view s) {
  Int value{};
  if (s.empty()) return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

// Splits on `sep`, keeping empty pieces ("a,,b" -> {"a","","b"}; "" -> {""}).
inline std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(s.substr(start));
      return out;
    }
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

inline std::string Quote(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

}  // namespace vgpu::codec_internal
