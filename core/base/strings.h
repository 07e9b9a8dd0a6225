#pragma once

// Small string helpers shared across components: one home instead of a copy per file.

#include <cctype>
#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace vgpu {

// ASCII lower case ("NVIDIA-A100" -> "nvidia-a100"); other bytes unchanged.
inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// `s` without leading and trailing white space (std::isspace: space, \t, \n, \v, \f, \r).
inline std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

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

}  // namespace vgpu
