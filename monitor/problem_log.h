#pragma once

// Logs a recurring problem once, not once per tick: a line when the problem of a key appears or its
// message changes; a problem that went away and comes back is logged again.

#include <functional>
#include <map>
#include <string>

namespace vgpu::monitor {

class ProblemLog {
 public:
  explicit ProblemLog(std::function<void(const std::string&)> sink) : sink_(std::move(sink)) {}

  void Report(const std::string& key, const std::string& message) {
    auto [it, fresh] = last_.try_emplace(key, message);
    if (!fresh && it->second == message) return;
    it->second = message;
    sink_(message);
  }
  void Resolve(const std::string& key) { last_.erase(key); }
  // Forgets the problems of keys starting with `prefix` (a directory that is gone).
  void ResolvePrefix(const std::string& prefix) {
    for (auto it = last_.lower_bound(prefix); it != last_.end() && it->first.starts_with(prefix);) {
      it = last_.erase(it);
    }
  }
  void Log(const std::string& message) const { sink_(message); }

 private:
  std::function<void(const std::string&)> sink_;
  std::map<std::string, std::string> last_;
};

}  // namespace vgpu::monitor
