#include "core/monitor/flags.h"

#include <cmath>
#include <utility>

#include "core/base/strings.h"

namespace vgpu::monitor {
namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// Nanoseconds per unit, Go's unitMap.
double UnitNanos(std::string_view unit) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1},          {"us", 1e3}, {"\xC2\xB5s", 1e3},  // U+00B5 micro sign
      {"\xCE\xBCs", 1e3},                                   // U+03BC Greek mu
      {"ms", 1e6},        {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
  for (const auto& [name, nanos] : kUnits) {
    if (unit == name) return nanos;
  }
  return 0;
}

}  // namespace

Result<std::chrono::nanoseconds> ParseGoDuration(std::string_view text) {
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
    while (i < s.size() && IsDigit(s[i])) {
      value = value * 10 + (s[i] - '0');
      digits = true;
      ++i;
    }
    if (i < s.size() && s[i] == '.') {
      ++i;
      double scale = 0.1;
      while (i < s.size() && IsDigit(s[i])) {
        value += (s[i] - '0') * scale;
        scale /= 10;
        digits = true;
        ++i;
      }
    }
    if (!digits) return bad("expected a number");
    size_t unit_end = i;
    while (unit_end < s.size() && !IsDigit(s[unit_end]) && s[unit_end] != '.') ++unit_end;
    const std::string_view unit = s.substr(i, unit_end - i);
    if (unit.empty()) return bad("missing unit");
    const double nanos = UnitNanos(unit);
    if (nanos == 0) return bad("unknown unit \"" + std::string(unit) + "\"");
    total += value * nanos;
    s.remove_prefix(unit_end);
  }
  // Go's limit: an int64 of nanoseconds (about 292 years).
  if (total >= 9.2233720368547758e18) return bad("out of range");
  const auto ns = static_cast<int64_t>(std::llround(total));
  return std::chrono::nanoseconds(negative ? -ns : ns);
}

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  ListenAddress out;
  const size_t colon = text.rfind(':');
  std::string_view port_text = text;
  if (colon != std::string_view::npos) {
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  if (out.host.empty()) out.host = "0.0.0.0";
  const std::optional<int> port = ParseInt<int>(port_text);
  if (!port || *port < 0 || *port > 65535) {
    return InvalidArgument("listen address \"" + std::string(text) +
                           "\" needs a port 0..65535 (host:port, :port or [v6]:port)");
  }
  out.port = *port;
  return out;
}

std::vector<std::string> GoStyleArgs(std::vector<std::string> args) {
  for (std::string& a : args) {
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-' || a[1] == '-') continue;
    const bool letter = (a[1] >= 'a' && a[1] <= 'z') || (a[1] >= 'A' && a[1] <= 'Z');
    const size_t eq = a.find('=');
    const size_t name_len = (eq == std::string::npos ? a.size() : eq) - 1;
    if (letter && (name_len > 1 || eq != std::string::npos)) a.insert(0, "-");
  }
  return args;
}

}  // namespace vgpu::monitor
