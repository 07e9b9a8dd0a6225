#pragma once

// Logs a recurring problem once, not once per tick: a line when the problem of a key appears or its
// message changes; a problem that went away and comes back is logged again.
//
// A problem may name a source (a container's folder): each source gets at most kLinesPerSource
// lines per kSourceWindow, so that a container whose files change every tick (a tenant scribbling
// them on purpose) cannot fill the node's log or drown the lines about other containers. Lines over
// the budget are counted and dropped, one line saying so; a problem dropped that way is logged
// when the budget allows (its message is not remembered as logged).
//
// Problems go to the sink as warnings; Log's lines (what the monitor did) as information.

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "core/base/log.h"

namespace vgpu::monitor {

class ProblemLog {
 public:
  static constexpr int kLinesPerSource = 5;
  static constexpr std::chrono::seconds kSourceWindow{60};

  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  using Sink = std::function<void(log::Level, const std::string&)>;

  explicit ProblemLog(Sink sink, Clock clock = {})
      : sink_(std::move(sink)), clock_(clock ? std::move(clock) : Clock(SteadyNow)) {}

  // `source`: "" for the node's own problems (never rate-limited).
  void Report(const std::string& key, const std::string& message, const std::string& source = "") {
    auto it = last_.find(key);
    if (it != last_.end() && it->second == message) return;
    if (!source.empty() && !Admit(source)) return;
    last_[key] = message;
    sink_(log::Level::kWarn, message);
  }
  void Resolve(const std::string& key) { last_.erase(key); }
  // Forgets the problems of keys starting with `prefix` (a directory that is gone).
  void ResolvePrefix(const std::string& prefix) {
    for (auto it = last_.lower_bound(prefix); it != last_.end() && it->first.starts_with(prefix);) {
      it = last_.erase(it);
    }
  }
  // Forgets a source's budget (its folder is gone).
  void ForgetSource(const std::string& source) { budgets_.erase(source); }
  void Log(const std::string& message) const { sink_(log::Level::kInfo, message); }

 private:
  struct Budget {
    std::chrono::steady_clock::time_point window_start;
    int lines = 0;
    int dropped = 0;
  };

  static std::chrono::steady_clock::time_point SteadyNow() {
    return std::chrono::steady_clock::now();
  }

  bool Admit(const std::string& source) {
    const auto now = clock_();
    auto [it, fresh] = budgets_.try_emplace(source, Budget{now, 0, 0});
    Budget& b = it->second;
    if (!fresh && now - b.window_start >= kSourceWindow) {
      if (b.dropped > 0) {
        sink_(log::Level::kWarn,
              source + ": " + std::to_string(b.dropped) + " more problem lines were not logged");
      }
      b = Budget{now, 0, 0};
    }
    if (b.lines < kLinesPerSource) {
      ++b.lines;
      return true;
    }
    if (b.dropped++ == 0) {
      sink_(log::Level::kWarn,
            source + ": more than " + std::to_string(kLinesPerSource) +
                " problems a minute; the next are not logged until the minute is over (the "
                "snapshot's containers list shows its state)");
    }
    return false;
  }

  Sink sink_;
  Clock clock_;
  std::map<std::string, std::string> last_;
  std::map<std::string, Budget> budgets_;
};

}  // namespace vgpu::monitor
