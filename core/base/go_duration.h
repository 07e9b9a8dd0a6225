#pragma once

// Go's time.ParseDuration ("5m", "90s", "1h30m", "250ms", "1.5h"; units ns us µs ms s m h; an
// optional sign): the form of HAMi's and kube-scheduler's duration flags and environment values.
// One home for the monitor's --cleanup-grace and the scheduler's --leader-elect-* durations.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/base/status.h"

namespace vgpu {
namespace go_duration_detail {

inline bool IsAsciiDigit(char c) {
  return c >= '0' && c <= '9';
}

// Nanoseconds per unit, Go's unitMap.
inline double GoDurationUnitNanos(std::string_view unit) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1},          {"us", 1e3}, {"\xC2\xB5s", 1e3},  // U+00B5 micro sign
      {"\xCE\xBCs", 1e3},                                   // U+03BC Greek mu
      {"ms", 1e6},        {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
  for (const auto& [name, nanos] : kUnits) {
    if (unit == name) return nanos;
  }
  return 0;
}

}  // namespace go_duration_detail

inline Result<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("duration \"" + std::string(text) + "\": " + why +
                           " (Go form, e.g. \"5m\", \"90s\", \"1h30m\", \"250ms\")");
  };
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  if (s.empty()) return bad("empty");
  double total = 0;
  while (!s.empty()) {
    size_t i = 0;
    double value = 0;
    bool digits = false;
    while (i < s.size() && go_duration_detail::IsAsciiDigit(s[i])) {
      value = value * 10 + (s[i] - '0');
      digits = true;
      ++i;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      double scale = 0.1;
      while (i < s.size() && go_duration_detail::IsAsciiDigit(s[i])) {
        value += (s[i] - '0') * scale;
        scale /= 10;
        digits = true;
        ++i;
      }
    }
    if (!digits) return bad("expected a number");
    size_t unit_end = i;
    while (unit_end < s.size() && !go_duration_detail::IsAsciiDigit(s[unit_end]) &&
           s[unit_end] != '.')
      ++unit_end;
    const std::string_view unit = s.substr(i, unit_end - i);
    if (unit.empty()) return bad("missing unit");
    const double nanos = go_duration_detail::GoDurationUnitNanos(unit);
    if (nanos == 0) return bad("unknown unit \"" + std::string(unit) + "\"");
    total += value * nanos;
    s.remove_prefix(unit_end);
  }
  // Go's limit: an int64 of nanoseconds (about 292 years).
  if (total >= 9.2233720368547758e18) return bad("out of range");
  const auto ns = static_cast<int64_t>(std::llround(total));
  return std::chrono::nanoseconds(negative ? -ns : ns);
}

}  // namespace vgpu
