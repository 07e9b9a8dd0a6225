#pragma once

// `promtool check metrics` on a rendered page, for the tests of every exporter (core/prom, the
// scheduler, the node monitor): promtool parses the text format as Prometheus does and lints it.
// Header-only so that any test target can use it (#include "tests/core/prom/promtool_check.h").
// CI installs promtool (Debian package `prometheus`, scripts/install-deps.sh); VGPU_PROMTOOL
// names another binary.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace vgpu::prom::testing {

struct PromtoolResult {
  // promtool's exit status: 0 clean, 3 lint problems only, 1 the page does not parse.
  int exit_code = -1;
  std::vector<std::string> problems;  // one per non-empty output line
  std::string output;
};

// The promtool binary: $VGPU_PROMTOOL, else the first `promtool` on $PATH; empty when none.
inline std::string FindPromtool() {
  if (const char* env = std::getenv("VGPU_PROMTOOL"); env != nullptr && *env != '\0') return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/promtool";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Runs `promtool check metrics` with `page` on its stdin; nullopt when promtool is not installed.
inline std::optional<PromtoolResult> PromtoolCheck(const std::string& page) {
  const std::string promtool = FindPromtool();
  if (promtool.empty()) return std::nullopt;
  const char* tmp = std::getenv("VGPU_TEST_TMP");
  std::string file = std::string(tmp != nullptr ? tmp : "/tmp") + "/promtool-page-XXXXXX";
  const int fd = ::mkstemp(file.data());
  if (fd < 0) return PromtoolResult{-1, {"mkstemp failed: " + file}, "mkstemp failed: " + file};
  size_t done = 0;
  while (done < page.size()) {
    const ssize_t n = ::write(fd, page.data() + done, page.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  (void)::close(fd);
  PromtoolResult r;
  const std::string cmd = "'" + promtool + "' check metrics < '" + file + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    (void)::unlink(file.c_str());
    r.output = "popen failed: " + cmd;
    r.problems.push_back(r.output);
    return r;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  (void)::unlink(file.c_str());
  if (done != page.size()) r.problems.insert(r.problems.begin(), "short write to " + file);
  std::stringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) r.problems.push_back(line);
  }
  return r;
}

}  // namespace vgpu::prom::testing
