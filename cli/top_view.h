#pragma once

// `vgpu top`'s pure part: a node snapshot (core/monitor/snapshot.h) and a terminal width in, the
// lines of one frame out; plus the parsing of its flags. No I/O, so that every layout rule is
// table-tested (tests/cli/top_view_test.cpp); top_command.cpp fetches, draws and reads keys.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/monitor/snapshot.h"

namespace vgpu::cli::top {

// Terminal columns taken by UTF-8 text: one per code point. Pod names are ASCII (RFC 1123) and
// the view's own marks ("…", "∞", the bars' blocks) are one column wide, so no wide-character
// table is needed. The view's colour codes (ESC [ ... m) take none.
size_t DisplayWidth(std::string_view text);

// `text` cut to at most `width` columns; a cut ends with "…" so that the reader sees it. Colour
// codes are kept (none is cut in half); a cut coloured text ends with a reset.
std::string Truncate(std::string_view text, size_t width);

// How full something is, as a bar of `width` cells ("███░░░░░░░"): whole cells, rounded to the
// nearest, but anything above 0 shows at least one cell and anything below full leaves at least
// one empty, so that the bar never says idle or full when it is not. At or above 100% every cell
// is filled. With `color`, the filled cells are green below 75%, yellow below 90%, red from 90%.
std::string Bar(double percent, size_t width, bool color);
inline constexpr size_t kBarWidth = 10;

// Human units, MiB below 1 GiB ("0MiB", "<1MiB", "512MiB") and GiB with one decimal above
// ("3.0GiB"), as nvidia-smi and HAMi's gpumem count in MiB.
std::string FormatBytes(uint64_t bytes);

// Time since the last kernel: "0.2s ago", "42s ago", "3m ago", "5h ago", "2d ago"; "-" when the
// container never launched one.
std::string FormatAgo(std::optional<double> seconds);

// "GPU-8f3a2c1d" from "GPU-8f3a2c1d-5e6f-...": enough to tell a node's GPUs apart.
std::string ShortUuid(std::string_view uuid);

// "namespace/pod/container" in at most `width` columns. A pod the monitor does not know yet (no
// namespace) shows as "?/<pod uid>/container". Too long, the pod part is cut first, then the
// namespace, so that the container (what tells a pod's containers apart) stays readable.
std::string ContainerName(const monitor::ContainerGpuView& container, size_t width);

// `text` broken into lines of at most `width` columns at spaces (a longer word is cut across
// lines): a status or error message is shown whole, not cut at the edge.
std::vector<std::string> Wrap(std::string_view text, size_t width);

struct ViewOptions {
  size_t width = 80;  // terminal columns; no line of the frame is longer
  // Memory (used/total, used/limit) and compute (utilization; for a container, of its SM limit)
  // as Bars beside their percents: for a person at a terminal. Off: the plain table that
  // `vgpu top --once` writes to a file or a pipe, which scripts may read.
  bool bars = false;
  // ANSI colours (bars by level, the headers bold, problem lines red); only with a terminal that
  // wants them (top_command.cpp: a TTY, NO_COLOR unset, no --no-color). No line is wider for it.
  bool color = false;
  // Cells of each bar. RenderSnapshot narrows the bars to half, then leaves them out, where they
  // would cut a name at this width.
  size_t bar_width = kBarWidth;
};

// Whether to draw bars and colours. Bars and colours are for a person at a terminal: neither
// when stdout is not a TTY (a file or a pipe gets the plain table, unchanged for scripts) or with
// --plain. Colours also not with --no-color, a non-empty NO_COLOR (no-color.org) or TERM=dumb.
struct TerminalTraits {
  bool stdout_tty = false;
  const char* no_color_env = nullptr;  // getenv("NO_COLOR")
  const char* term_env = nullptr;      // getenv("TERM")
  bool no_color_flag = false;
  bool plain_flag = false;
};
void ChooseStyle(const TerminalTraits& t, ViewOptions& options);

// One frame: a summary line, a blank line, two header lines (the GPU rows' columns, then the
// indented container rows' columns), then per GPU (by index; those NVML does not list, index -1,
// last) its row and its containers (by namespace/pod/container). Missing figures (no NVML on the
// node) show as "-", no limit as "∞". Then, after a blank line, one line per container whose state
// is not ok ("! ns/pod/container unusable: <problem>").
std::vector<std::string> RenderSnapshot(const monitor::NodeSnapshot& snapshot,
                                        const ViewOptions& options);

// At most `rows` lines: when the frame is taller than the terminal, its end gives way to a line
// saying how many lines are hidden, so that the screen never scrolls the header away. rows == 0:
// no limit.
std::vector<std::string> FitHeight(std::vector<std::string> lines, size_t rows);

// --interval: "1s", "200ms", "1.5s", "2m", or a bare number of seconds; 50 ms to 1 h.
Result<std::chrono::milliseconds> ParseInterval(std::string_view text);

// --url: the monitor's address. "http://host:9394" (or "host:9394") asks for /api/v1/snapshot; a
// URL with a path asks for that path.
struct MonitorUrl {
  std::string base;  // "http://host:9394": scheme, host and port, what the HTTP client takes
  std::string path;  // "/api/v1/snapshot"
  std::string Full() const { return base + path; }
};
Result<MonitorUrl> ParseMonitorUrl(std::string_view url);

}  // namespace vgpu::cli::top
