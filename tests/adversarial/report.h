#pragma once

// What the adversarial suite reports beside its verdicts: for each abuse, what a good client saw
// while it went on (its requests' latencies) and what the attacked process held (resident memory).
// Each case calls Report once per abuse; the line goes to stdout and is appended to the file named
// by VGPU_ADVERSARIAL_REPORT, else to the build's report (VGPU_ADVERSARIAL_REPORT_FILE, compiled
// in; scripts/test.sh prints it after the run), as a row of a Markdown table:
// | attacker | abuse | guarantee held | figures |.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::adversarial {

// Latencies of a good client's requests during an abuse, in milliseconds; `failed` counts the
// requests that got no answer or an error answer.
struct Latencies {
  std::vector<double> ms;
  size_t failed = 0;

  void Add(double value_ms) { ms.push_back(value_ms); }
  // The q-quantile (0..1) by nearest rank; 0 when empty.
  double Quantile(double q) const {
    if (ms.empty()) return 0;
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const auto rank = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
    return sorted[std::min(rank, sorted.size() - 1)];
  }
  std::string Text() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "good requests: %zu ok, %zu failed, p50 %.1f ms, p99 %.1f ms",
                  ms.size(), failed, Quantile(0.5), Quantile(0.99));
    return buf;
  }
};

// A field of /proc/<pid>/status in KiB (pid 0: this process); -1 when unreadable.
inline long StatusKib(const char* field, int pid) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/status") : "/proc/" + std::to_string(pid) + "/status";
  std::ifstream in(path);
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return std::strtol(line.c_str() + prefix.size(), nullptr, 10);
  }
  return -1;
}

// Resident memory of a process now (VmRSS), KiB.
inline long RssKib(int pid = 0) {
  return StatusKib("VmRSS", pid);
}

// The most it has been resident since it started (VmHWM), KiB: each GoogleTest case of the suite
// runs in a process of its own (gtest_discover_tests), so this is the case's peak.
inline long PeakRssKib(int pid = 0) {
  return StatusKib("VmHWM", pid);
}

inline std::string MiB(long kib) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(kib) / 1024.0);
  return buf;
}

// One row of the report. `attacker`: who (a network client, a pod's author, a tenant's process,
// a local user); `abuse`: what it did; `guarantee`: what held; `figures`: the numbers.
inline void Report(std::string_view attacker, std::string_view abuse, std::string_view guarantee,
                   std::string_view figures) {
  std::ostringstream row;
  row << "| " << attacker << " | " << abuse << " | " << guarantee << " | " << figures << " |\n";
  const std::string text = row.str();
  std::fputs(("adversarial: " + text).c_str(), stdout);
  std::fflush(stdout);
  const char* file = std::getenv("VGPU_ADVERSARIAL_REPORT");
#ifdef VGPU_ADVERSARIAL_REPORT_FILE
  if (file == nullptr) file = VGPU_ADVERSARIAL_REPORT_FILE;
#endif
  if (file == nullptr || *file == '\0') return;
  // One write with O_APPEND: rows of cases that run at once do not interleave.
  const int fd = ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

}  // namespace vgpu::adversarial
