#pragma once

// Logging of the daemons: one line per event on stderr, logfmt (key=value, quoted where needed) in
// the same shape as the device plugin's lines, so that a log pipeline parses every component alike:
//
//   time=2026-11-26T21:40:01.123Z level=info msg=bind pod=default/train-0 node=gpu-1 ms=12
//   time=2026-11-26T21:40:02.000Z level=warn msg="bind failed" pod=default/x error="..."
//
// Levels as klog's: errors, warnings and V(0) information always; V(n) information when the
// daemon runs with `-v n` (HAMi's charts pass `-v=4`) or more. Header-only.

#include <atomic>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

namespace vgpu::log {

inline std::atomic<int> g_verbosity{0};

inline void SetVerbosity(int v) {
  g_verbosity.store(v < 0 ? 0 : v, std::memory_order_relaxed);
}
inline bool V(int level) {
  return level <= g_verbosity.load(std::memory_order_relaxed);
}

struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v != nullptr ? v : "") {}
  template <typename Int, typename = std::enable_if_t<std::is_arithmetic_v<Int>>>
  Field(std::string_view k, Int v) : key(k), value(std::to_string(v)) {}
  std::string_view key;
  std::string value;
};

// logfmt: bare when it can be, else double-quoted with \" \\ \n escaped.
inline void AppendValue(std::string& out, std::string_view v) {
  bool bare = !v.empty();
  for (char c : v) {
    if (c == ' ' || c == '=' || c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      bare = false;
      break;
    }
  }
  if (bare) {
    out += v;
    return;
  }
  out += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  out += '"';
}

// The line without its time and level (tests).
inline std::string Format(std::string_view message, std::initializer_list<Field> fields) {
  std::string line = "msg=";
  AppendValue(line, message);
  for (const Field& f : fields) {
    line += ' ';
    line += f.key;
    line += '=';
    AppendValue(line, f.value);
  }
  return line;
}

inline void Write(std::string_view level, std::string_view message,
                  std::initializer_list<Field> fields) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char prefix[96];
  std::snprintf(prefix, sizeof prefix,
                "time=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=", t.tm_year + 1900, t.tm_mon + 1,
                t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ts.tv_nsec / 1'000'000);
  std::string line = prefix;
  line += level;
  line += ' ';
  line += Format(message, fields);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);  // one call: lines of threads do not mix
}

inline void Info(std::string_view message, std::initializer_list<Field> fields = {}) {
  Write("info", message, fields);
}
inline void VInfo(int level, std::string_view message, std::initializer_list<Field> fields = {}) {
  if (V(level)) Write("info", message, fields);
}
inline void Warn(std::string_view message, std::initializer_list<Field> fields = {}) {
  Write("warn", message, fields);
}
inline void Error(std::string_view message, std::initializer_list<Field> fields = {}) {
  Write("error", message, fields);
}

}  // namespace vgpu::log
