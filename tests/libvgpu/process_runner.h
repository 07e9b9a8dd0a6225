#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace vgpu::testing {

// A child process with its stdout (and optionally stdin) on pipes. Not copyable; the destructor
// kills and reaps a child that is still running, so a failing test leaves nothing behind.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
        bool pipe_stdin);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  // Reads one line of stdout (without the newline); "" at end of file.
  std::string ReadLine();
  // ReadLine with a deadline: false when no whole line came within `timeout_ms` (nothing is lost:
  // a partial line stays buffered) or at end of file with nothing left.
  bool ReadLineWithin(int timeout_ms, std::string* line);
  std::string ReadAllStdout();
  std::string ReadAllStderr();
  // Writes `line` and a newline to stdin (a child started with pipe_stdin); false on error.
  bool WriteLine(const std::string& line);
  void CloseStdin();
  // Waits and returns the raw wait status.
  int Wait();
  // Waits at most `timeout_ms`; false (child left running) when it has not ended by then.
  bool WaitWithin(int timeout_ms, int* status);

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int err_ = -1;
  int in_ = -1;
  std::string buffer_;
  bool waited_ = false;
};

struct RunResult {
  int status = 0;  // raw wait status
  std::string out;
  std::string err;
};

RunResult RunProcess(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env);

}  // namespace vgpu::testing
