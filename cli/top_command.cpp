// `vgpu top`: a live view of one node's GPUs and the containers on them, read from the node
// monitor's /api/v1/snapshot (or from a snapshot file), redrawn every --interval like `top`.
// The layout is cli/top_view.cpp's; this file fetches, draws and reads the keyboard.

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/bounded_read.h"
#include "cli/flag_values.h"
#include "cli/top_view.h"
#include "cli_app.h"
#include "core/base/strings.h"
#include "core/monitor/snapshot_json.h"

#ifdef VGPU_TOP_HTTP
#include <httplib.h>
#endif

namespace vgpu::cli {

namespace {

constexpr int kExitError = 1;
constexpr const char* kDefaultUrl = "http://127.0.0.1:9394";
constexpr const char* kUrlEnv = "VGPU_MONITOR_URL";

struct TopFlags {
  std::string interval = "1s";
  bool once = false;
  bool json = false;
  std::string url;
  std::string file;
  size_t width = 0;
  bool no_color = false;
  bool plain = false;
};

// Where snapshots come from: the monitor over HTTP or a file, read anew on every call.
struct Source {
  std::string where;  // the URL or the file, for messages
  std::function<Result<std::string>()> fetch;
};

// A node's snapshot is a few MiB at most (the monitor's table holds 4,096 containers); a file or
// an answer beyond this is not one, and is not read on.
constexpr size_t kMaxSnapshotBytes = size_t{64} << 20;

Result<std::string> ReadFile(const std::string& path) {
  return ReadBoundedFile(path, kMaxSnapshotBytes, "snapshot file");
}

#ifdef VGPU_TOP_HTTP
// httplib names its errors in one word ("Connection"); a user needs the likely cause.
std::string DescribeHttpError(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "connection refused or host unreachable";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out";
    case httplib::Error::Read:
      return "no answer (read failed or timed out)";
    default:
      return httplib::to_string(error);
  }
}

Result<std::string> FetchHttp(const top::MonitorUrl& url) {
  httplib::Client client(url.base);
  if (!client.is_valid()) return InvalidArgument("monitor URL " + url.Full() + " is not usable");
  // Short timeouts: in live mode a fetch holds up the keyboard, and a monitor on this node
  // answers in milliseconds or not at all.
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(5, 0);
  std::string body;
  bool too_large = false;
  httplib::Result res = client.Get(url.path, [&](const char* data, size_t length) {
    too_large = body.size() + length > kMaxSnapshotBytes;
    if (!too_large) body.append(data, length);
    return !too_large;
  });
  if (too_large) {
    return Unavailable("the answer of " + url.Full() + " is larger than " +
                       std::to_string(kMaxSnapshotBytes) + " bytes: not a node monitor's snapshot");
  }
  if (!res) {
    return Unavailable("cannot reach the node monitor at " + url.Full() + ": " +
                       DescribeHttpError(res.error()));
  }
  if (res->status != 200) {
    return Unavailable("node monitor at " + url.Full() + " answered HTTP " +
                       std::to_string(res->status) + ": " +
                       std::string(TrimSpace(std::string_view(body).substr(0, 200))));
  }
  return body;
}
#endif

Result<Source> MakeSource(const TopFlags& f) {
  if (!f.file.empty()) {
    const std::string path = f.file;
    return Source{path, [path] { return ReadFile(path); }};
  }
  std::string url = f.url;
  if (url.empty()) {
    const char* env = std::getenv(kUrlEnv);
    url = env != nullptr && env[0] != '\0' ? env : kDefaultUrl;
  }
  auto parsed = top::ParseMonitorUrl(url);
  if (!parsed.ok()) return parsed.status();
#ifdef VGPU_TOP_HTTP
  return Source{parsed->Full(), [u = *parsed] { return FetchHttp(u); }};
#else
  return Source{parsed->Full(), [u = *parsed]() -> Result<std::string> {
                  return FailedPrecondition(
                      "this vgpu was built without an HTTP client (cpp-httplib); "
                      "cannot read " +
                      u.Full() + ", use --file");
                }};
#endif
}

Result<monitor::NodeSnapshot> Load(const Source& source, std::string* text = nullptr) {
  Result<std::string> body = source.fetch();
  if (!body.ok()) return body.status();
  auto snapshot = monitor::SnapshotFromJson(*body);
  if (!snapshot.ok()) return snapshot.status().WithContext(source.where);
  if (text != nullptr) *text = std::move(*body);
  return snapshot;
}

// The terminal size: --width, else the terminal's own (TIOCGWINSZ), else $COLUMNS / $LINES, else
// 80 columns and no height limit.
size_t EnvSize(const char* name) {
  const char* v = std::getenv(name);
  const auto n = v != nullptr ? ParseInt<size_t>(TrimSpace(v)) : std::nullopt;
  return n.value_or(0);
}
size_t TerminalWidth(size_t flag) {
  if (flag > 0) return flag;
  struct winsize ws {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  const size_t columns = EnvSize("COLUMNS");
  return columns > 0 ? columns : 80;
}

// Bars and colours for this terminal (top::ChooseStyle), at `width` columns.
top::ViewOptions View(const TopFlags& f) {
  top::ViewOptions o;
  o.width = TerminalWidth(f.width);
  top::ChooseStyle({.stdout_tty = isatty(STDOUT_FILENO) == 1,
                    .no_color_env = std::getenv("NO_COLOR"),
                    .term_env = std::getenv("TERM"),
                    .no_color_flag = f.no_color,
                    .plain_flag = f.plain},
                   o);
  return o;
}

size_t TerminalRows() {
  struct winsize ws {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) return ws.ws_row;
  return EnvSize("LINES");
}

// --- the terminal in live mode --------------------------------------------------------------
// Keys are read one by one without echo (non-canonical mode), Ctrl-C still raises SIGINT. The
// signal handlers only note the signal and wake the main loop through a pipe; the terminal is
// restored by the loop's exit, and around a stop (Ctrl-Z) by the handlers themselves, since the
// loop does not run while the process is stopped. State the handlers touch is static.

volatile sig_atomic_t g_quit_signal = 0;  // the first terminating signal received
volatile sig_atomic_t g_raw_active = 0;   // the terminal is in our mode
int g_wake_fd = -1;                       // write end of the self-pipe
struct termios g_saved_termios {};
struct termios g_raw_termios {};

void Wake() {
  if (g_wake_fd >= 0) {
    const char byte = 0;
    const ssize_t written = write(g_wake_fd, &byte, 1);
    (void)written;  // a full pipe wakes the loop as well
  }
}

void OnSignal(int signo);

void InstallHandler(int signo) {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(signo, &sa, nullptr);
}

void OnSignal(int signo) {
  const int saved_errno = errno;
  switch (signo) {
    case SIGTSTP: {
      // Hand the shell its terminal back, then stop as the default action would.
      if (g_raw_active != 0) tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_termios);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigemptyset(&dfl.sa_mask);
      sigaction(SIGTSTP, &dfl, nullptr);
      (void)raise(SIGTSTP);  // delivered when this handler returns (SIGTSTP is blocked in it)
      break;
    }
    case SIGCONT:
      if (g_raw_active != 0) tcsetattr(STDIN_FILENO, TCSANOW, &g_raw_termios);
      InstallHandler(SIGTSTP);
      break;
    case SIGWINCH:
      break;
    default:
      if (g_quit_signal == 0) g_quit_signal = signo;
      break;
  }
  Wake();
  errno = saved_errno;
}

constexpr int kHandledSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGCONT};

enum class Event { kTimeout, kRefresh, kRedraw, kQuit };

class LiveTerminal {
 public:
  LiveTerminal() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
      wake_read_ = fds[0];
      g_wake_fd = fds[1];
    }
    g_quit_signal = 0;
    for (size_t i = 0; i < std::size(kHandledSignals); ++i) {
      struct sigaction sa {};
      sa.sa_handler = OnSignal;
      sigemptyset(&sa.sa_mask);
      sigaction(kHandledSignals[i], &sa, &old_actions_[i]);
    }
    if (isatty(STDIN_FILENO) == 1 && tcgetattr(STDIN_FILENO, &g_saved_termios) == 0) {
      g_raw_termios = g_saved_termios;
      g_raw_termios.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      g_raw_termios.c_cc[VMIN] = 1;
      g_raw_termios.c_cc[VTIME] = 0;
      if (tcsetattr(STDIN_FILENO, TCSANOW, &g_raw_termios) == 0) g_raw_active = 1;
    }
  }
  ~LiveTerminal() {
    if (g_raw_active != 0) {
      g_raw_active = 0;
      tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_termios);
    }
    for (size_t i = 0; i < std::size(kHandledSignals); ++i) {
      sigaction(kHandledSignals[i], &old_actions_[i], nullptr);
    }
    if (g_wake_fd >= 0) close(g_wake_fd);
    g_wake_fd = -1;
    if (wake_read_ >= 0) close(wake_read_);
  }
  LiveTerminal(const LiveTerminal&) = delete;
  LiveTerminal& operator=(const LiveTerminal&) = delete;

  // The exit status for a terminating signal: 0 for Ctrl-C, which quits like 'q' does.
  [[nodiscard]] static int ExitCode() {
    const int signo = g_quit_signal;
    return signo == 0 || signo == SIGINT ? kExitOk : 128 + signo;
  }

  // Waits up to `timeout` for a key or a signal.
  Event Wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (g_quit_signal != 0) return Event::kQuit;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return Event::kTimeout;
      std::vector<pollfd> fds;
      if (wake_read_ >= 0) fds.push_back({wake_read_, POLLIN, 0});
      if (keyboard_open_) fds.push_back({STDIN_FILENO, POLLIN, 0});
      const int n = poll(fds.data(), fds.size(), static_cast<int>(left.count()));
      if (n <= 0) continue;  // EINTR: the handler's flag is checked above
      Event event = Event::kTimeout;
      for (const pollfd& p : fds) {
        if (p.revents == 0) continue;
        if (p.fd == wake_read_) {
          char buf[64];
          while (read(wake_read_, buf, sizeof buf) > 0) {
          }
          event = Event::kRedraw;  // a resize or a continue after Ctrl-Z
        } else {
          const Event key = ReadKeys();
          if (key != Event::kTimeout) event = key;
        }
      }
      if (g_quit_signal != 0) return Event::kQuit;
      if (event != Event::kTimeout) return event;
    }
  }

 private:
  Event ReadKeys() {
    char buf[64];
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
      keyboard_open_ = false;  // no keyboard (end of input): the loop runs until a signal
      return Event::kTimeout;
    }
    Event event = Event::kTimeout;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == 'q' || buf[i] == 'Q') return Event::kQuit;
      if (buf[i] == ' ') event = Event::kRefresh;  // as in top: refresh now
    }
    return event;
  }

  int wake_read_ = -1;
  bool keyboard_open_ = true;
  struct sigaction old_actions_[std::size(kHandledSignals)]{};
};

std::string FormatInterval(std::chrono::milliseconds ms) {
  if (ms.count() % 1000 == 0) return std::to_string(ms.count() / 1000) + "s";
  return std::to_string(ms.count()) + "ms";
}

int RunLive(const Source& source, std::chrono::milliseconds interval, const TopFlags& f,
            std::ostream& out) {
  LiveTerminal terminal;
  const bool clear = isatty(STDOUT_FILENO) == 1;
  std::optional<monitor::NodeSnapshot> last;
  std::string error;
  bool fetch = true;
  while (true) {
    if (fetch) {
      auto snapshot = Load(source);
      if (snapshot.ok()) {
        last = std::move(*snapshot);
        error.clear();
      } else {
        error = snapshot.status().message();
      }
    }
    const top::ViewOptions view = View(f);
    const size_t width = view.width;
    std::vector<std::string> lines;
    if (last) lines = top::RenderSnapshot(*last, view);
    // The status under the frame: the error (over the last good frame, if any) or how to quit;
    // wrapped, not cut, since the error is what the user must read.
    const std::vector<std::string> status = top::Wrap(
        error.empty() ? "every " + FormatInterval(interval) + " from " + source.where +
                            "; q or Ctrl-C quits, space refreshes"
                      : "error: " + error + " (retrying every " + FormatInterval(interval) + ")",
        width);
    if (clear) {
      // The frame gives way to the status when the screen is short, and no newline follows the
      // last line: a full screen must not scroll.
      const size_t rows = TerminalRows();
      if (rows > 0)
        lines = top::FitHeight(std::move(lines), rows > status.size() ? rows - status.size() : 1);
      lines.insert(lines.end(), status.begin(), status.end());
      std::string frame = "\x1b[H\x1b[2J";
      for (size_t i = 0; i < lines.size(); ++i) frame += (i == 0 ? "" : "\n") + lines[i];
      out << frame << std::flush;
    } else {
      lines.insert(lines.end(), status.begin(), status.end());
      for (const std::string& line : lines) out << line << "\n";
      out << "\n" << std::flush;
    }
    const Event event = terminal.Wait(interval);
    if (event == Event::kQuit) break;
    fetch = event != Event::kRedraw;
  }
  if (clear) out << "\n" << std::flush;
  return LiveTerminal::ExitCode();
}

int RunTop(const TopFlags& f, Io io) {
  auto interval = top::ParseInterval(f.interval);
  if (!interval.ok()) {
    io.err << "vgpu top: " << interval.status().message() << "\n";
    return kExitUsage;
  }
  auto source = MakeSource(f);
  if (!source.ok()) {
    io.err << "vgpu top: " << source.status().message() << "\n";
    return kExitUsage;
  }
  if (!f.json && !f.once) return RunLive(*source, *interval, f, io.out);

  std::string text;
  auto snapshot = Load(*source, &text);
  if (!snapshot.ok()) {
    io.err << "vgpu top: " << snapshot.status().message();
    if (f.file.empty())
      io.err << " (is vgpu-monitor running there? set --url or " << kUrlEnv << ")";
    io.err << "\n";
    return kExitError;
  }
  if (f.json) {
    // The monitor's own text, checked to be a snapshot: fields a newer monitor adds pass through.
    io.out << text << (text.empty() || text.back() != '\n' ? "\n" : "");
    return kExitOk;
  }
  for (const std::string& line : top::RenderSnapshot(*snapshot, View(f))) {
    io.out << line << "\n";
  }
  return kExitOk;
}

Action RegisterTop(CLI::App& parent, Io io) {
  CLI::App* cmd = parent.add_subcommand(
      "top", "Live view of one node's GPUs and containers from its vgpu-monitor (like top)");
  auto f = std::make_shared<TopFlags>();
  cmd->add_option("--interval", f->interval, "time between frames: 1s, 500ms, 2m")
      ->capture_default_str();
  cmd->add_flag("--once", f->once, "print one frame and exit");
  cmd->add_flag("--json", f->json, "print the snapshot JSON once and exit");
  CLI::Option* url = cmd->add_option(
      "--url", f->url,
      std::string("the node monitor (default $") + kUrlEnv + ", else " + kDefaultUrl + ")");
  url->check(NotEmpty());
  cmd->add_option("--file", f->file, "read a snapshot JSON file instead (re-read every frame)")
      ->check(NotEmpty())
      ->excludes(url);
  cmd->add_option("--width", f->width, "columns to fit (default: the terminal's, else 80)")
      ->check(WholeNumber(20, 1000));
  cmd->add_flag("--no-color", f->no_color,
                "no colours (also with NO_COLOR set, TERM=dumb, or when stdout is not a terminal)");
  cmd->add_flag("--plain", f->plain,
                "no bars and no colours: the table as written to a file or a pipe");
  return [cmd, f, io]() {
    if (!cmd->parsed()) return kNotSelected;
    return RunTop(*f, io);
  };
}

const bool kRegistered = RegisterCommand(30, RegisterTop);

}  // namespace

}  // namespace vgpu::cli
