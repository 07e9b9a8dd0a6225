#pragma once

// The one logger of the daemons (vgpu-scheduler, vgpu-device-plugin, vgpu-monitor) and of the
// components they embed: one logfmt line per event on stderr. docs/operations.md ("Logs") defines
// the line and what each `-v` level adds; this header is its implementation. Header-only.
//
//   time=2026-11-26T21:40:01.123Z level=info msg=bind pod=default/train-0 node=gpu-1 ms=12
//   time=2026-11-26T21:40:02.000Z level=warn msg="bind failed" pod=default/x error="say \"no\""
//
// Levels as klog's: errors, warnings and V(0) information always; V(n) information when the
// daemon runs with `-v n` or more (core/base/daemon_flags.h registers the flag).

#include <atomic>
#include <cstdio>
#include <ctime>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

namespace vgpu::log {

// In the order of severity: a threshold keeps its own level and the ones above it.
enum class Level { kError = 0, kWarn = 1, kInfo = 2 };

inline std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kError:
      return "error";
    case Level::kWarn:
      return "warn";
    case Level::kInfo:
      break;
  }
  return "info";
}

inline std::atomic<int> g_verbosity{0};
inline std::atomic<Level> g_threshold{Level::kInfo};

// Where whole lines ('\n' included) go; nullptr: stderr. Tests capture lines with it.
using Sink = void (*)(std::string_view line);
inline std::atomic<Sink> g_sink{nullptr};

inline void SetVerbosity(int v) {
  g_verbosity.store(v < 0 ? 0 : v, std::memory_order_relaxed);
}
inline bool V(int level) {
  return level <= g_verbosity.load(std::memory_order_relaxed);
}
// Drops every line less severe than `level`: a process that embeds many components (`vgpu sim`
// runs thousands of device plugins) keeps their warnings and errors only.
inline void SetThreshold(Level level) {
  g_threshold.store(level, std::memory_order_relaxed);
}
inline bool Enabled(Level level) {
  return level <= g_threshold.load(std::memory_order_relaxed);
}
inline void SetSink(Sink sink) {
  g_sink.store(sink, std::memory_order_relaxed);
}

struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v != nullptr ? v : "") {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  template <typename Num, typename = std::enable_if_t<std::is_arithmetic_v<Num>>>
  Field(std::string_view k, Num v) : key(k), value(std::to_string(v)) {}
  std::string_view key;
  std::string value;
};

// A value as logfmt wants it: bare when it can be read back as it is, else double-quoted with the
// escapes of a Go string literal (\" \\ \n \r \t \u00XX), so that a quote or a newline inside an
// error message can neither end the value nor split the line.
inline void AppendValue(std::string& out, std::string_view v) {
  bool bare = !v.empty();
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ' ' || c == '=' || c == '"' || c == '\\' || u < 0x20 || u == 0x7f) {
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
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20 || u == 0x7f) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

// The line from msg= on (what the tests and LeaderElector's callback compare).
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

// The whole line, newline included, at wall-clock time `now` (UTC, milliseconds).
inline std::string FormatLine(Level level, const timespec& now, std::string_view message,
                              std::initializer_list<Field> fields) {
  tm t{};
  gmtime_r(&now.tv_sec, &t);
  char stamp[96];  // room for any tm values, as the compiler counts
  (void)std::snprintf(
      stamp, sizeof stamp, "time=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=", t.tm_year + 1900,
      t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, now.tv_nsec / 1'000'000);
  std::string line = stamp;
  line += LevelName(level);
  line += ' ';
  line += Format(message, fields);
  line += '\n';
  return line;
}

inline void Write(Level level, std::string_view message, std::initializer_list<Field> fields) {
  if (!Enabled(level)) return;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const std::string line = FormatLine(level, now, message, fields);
  if (Sink sink = g_sink.load(std::memory_order_relaxed); sink != nullptr) {
    sink(line);
    return;
  }
  (void)std::fwrite(line.data(), 1, line.size(), stderr);  // one call: threads' lines do not mix
}

inline void Info(std::string_view message, std::initializer_list<Field> fields = {}) {
  Write(Level::kInfo, message, fields);
}
inline void VInfo(int level, std::string_view message, std::initializer_list<Field> fields = {}) {
  if (V(level)) Write(Level::kInfo, message, fields);
}
inline void Warn(std::string_view message, std::initializer_list<Field> fields = {}) {
  Write(Level::kWarn, message, fields);
}
inline void Error(std::string_view message, std::initializer_list<Field> fields = {}) {
  Write(Level::kError, message, fields);
}

}  // namespace vgpu::log
